"""The three pools behind one interface, so the behaviour tests run against each."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import veter
from tests.services import MariaDB, Postgres, Redis, Service
from veter.health import enable as enable_health
from veter.pools import MySQLPool, Pool, PostgresPool, RedisPool


async def _pg_query(pool: Any) -> Any:
    return await pool.fetchval("SELECT 1")


async def _redis_query(pool: Any) -> Any:
    return 1 if await pool.client.ping() else 0


async def _mysql_query(pool: Any) -> Any:
    row = await pool.fetchone("SELECT 1")
    return row[0]


@dataclass(frozen=True)
class Kind:
    name: str
    fixture: str  # the session fixture with a running server
    service: Callable[[], Service]  # a new, not yet started server
    make: Callable[..., Pool[Any, Any]]  # (app, url, **settings)
    url: Callable[[Any], str]
    query: Callable[[Any], Awaitable[Any]]  # one round trip; returns 1


KINDS = [
    Kind(
        "postgres",
        "postgres_server",
        Postgres,
        lambda app, url, **kw: PostgresPool(app, dsn=url, **kw),
        lambda s: s.dsn,
        _pg_query,
    ),
    Kind(
        "redis",
        "redis_server",
        Redis,
        lambda app, url, **kw: RedisPool(app, url=url, **kw),
        lambda s: s.url,
        _redis_query,
    ),
    Kind(
        "mysql",
        "mariadb_server",
        MariaDB,
        lambda app, url, **kw: MySQLPool(app, url=url, **kw),
        lambda s: s.url,
        _mysql_query,
    ),
]


def app_with(kind: Kind, url: str, **settings: Any) -> tuple[veter.App, Pool[Any, Any]]:
    """An app with the pool, /readyz, and GET /q answering the query's result."""
    app = veter.App()
    pool = kind.make(app, url, **settings)
    enable_health(app)

    @app.get("/q")
    async def q(request: veter.Request) -> dict[str, Any]:
        return {"value": await kind.query(pool)}

    return app, pool
