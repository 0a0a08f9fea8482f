"""The redis+log scenario's shared piece: a redis-py pool (hiredis parser) and a
plain logging.FileHandler, the ordinary handler the field used, one line per request."""

import logging
import os
import random

import redis.asyncio as aioredis

_log = logging.getLogger("bench.access")


def _setup_log() -> None:
    handler = logging.FileHandler(os.environ["LOG_FILE"])
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(message)s"))
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False


_setup_log()
# A blocking pool: past 20 connections a request waits for one instead of failing.
_pool = aioredis.BlockingConnectionPool.from_url(os.environ["REDIS_URL"], max_connections=20, timeout=10)
_client = aioredis.Redis(connection_pool=_pool)


async def set_key() -> int:
    key = random.randint(1, 10_000)
    await _client.set(f"k{key}", "v")
    return key


async def set_and_log(path: str) -> None:
    key = await set_key()
    _log.info("GET %s 200 key=%d", path, key)
