"""Each pool's own helpers against its real server: transactions, pipelines, URLs."""

from __future__ import annotations

from typing import Any

import pytest
import redis.exceptions

import veter
from tests.services import MariaDB, Postgres, Redis
from veter.pools import MySQLPool, PostgresPool, RedisPool
from veter.pools.mysql import parse_url
from veter.testing import AsyncTestClient


async def test_postgres_transactions_commit_and_roll_back(postgres_server: Postgres) -> None:
    app = veter.App()
    pg = PostgresPool(app, dsn=postgres_server.dsn)
    async with AsyncTestClient(app):
        await pg.execute("DROP TABLE IF EXISTS tx_items")
        await pg.execute("CREATE TABLE tx_items (id int PRIMARY KEY, name text)")
        async with pg.transaction() as conn:
            await conn.execute("INSERT INTO tx_items VALUES (1, 'kept')")

        async def insert_then_fail() -> None:
            async with pg.transaction() as conn:
                await conn.execute("INSERT INTO tx_items VALUES (2, 'dropped')")
                raise RuntimeError("undo")

        with pytest.raises(RuntimeError, match="undo"):
            await insert_then_fail()
        await pg.executemany("INSERT INTO tx_items VALUES ($1, $2)", [(3, "a"), (4, "b")])
        rows = await pg.fetch("SELECT id, name FROM tx_items ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "kept"), (3, "a"), (4, "b")]
        assert (await pg.fetchrow("SELECT name FROM tx_items WHERE id = $1", 3))["name"] == "a"
        assert pg.stats()["in_use"] == 0


async def test_postgres_query_timeout_is_applied(postgres_server: Postgres) -> None:
    app = veter.App()
    pg = PostgresPool(app, dsn=postgres_server.dsn, query_timeout=0.2)
    async with AsyncTestClient(app):
        with pytest.raises(TimeoutError):
            await pg.execute("SELECT pg_sleep(5)")
        assert pg.state == "up", "a slow query is not an outage"
        assert await pg.fetchval("SELECT 2") == 2


async def test_redis_commands_and_pipelines_go_through_the_pool(redis_server: Redis) -> None:
    app = veter.App()
    cache = RedisPool(app, url=redis_server.url, max_size=2, decode_responses=True)
    async with AsyncTestClient(app):
        client = cache.client
        await client.set("veter:k", "v")
        assert await client.get("veter:k") == "v"
        async with client.pipeline(transaction=True) as pipe:
            pipe.incr("veter:n").incr("veter:n")
            assert await pipe.execute() == [1, 2]
        stats = cache.stats()
        assert stats["acquires"] >= 3 and stats["in_use"] == 0
        assert 1 <= stats["open"] <= 2


async def test_redis_command_timeout_is_not_an_outage(redis_server: Redis) -> None:
    app = veter.App()
    cache = RedisPool(app, url=redis_server.url, command_timeout=0.2)
    async with AsyncTestClient(app):
        with pytest.raises(redis.exceptions.TimeoutError):
            await cache.client.blpop(["veter:empty"], timeout=2)
        assert cache.state == "up"
        assert await cache.client.ping()


def test_redis_client_before_open_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="not open"):
        _ = RedisPool(url="redis://127.0.0.1:1/0").client


async def test_mysql_transactions_commit_and_roll_back(mariadb_server: MariaDB) -> None:
    app = veter.App()
    db = MySQLPool(app, url=mariadb_server.url)
    async with AsyncTestClient(app):
        await db.execute("DROP TABLE IF EXISTS tx_items")
        await db.execute("CREATE TABLE tx_items (id INT PRIMARY KEY, name VARCHAR(20))")
        async with db.transaction() as conn, conn.cursor() as cur:
            await cur.execute("INSERT INTO tx_items VALUES (1, 'kept')")

        async def insert_then_fail() -> None:
            async with db.transaction() as conn, conn.cursor() as cur:
                await cur.execute("INSERT INTO tx_items VALUES (2, 'dropped')")
                raise RuntimeError("undo")

        with pytest.raises(RuntimeError, match="undo"):
            await insert_then_fail()
        assert await db.execute("INSERT INTO tx_items VALUES (%s, %s)", (3, "a")) == 1
        rows: list[Any] = await db.fetchall("SELECT id, name FROM tx_items ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "kept"), (3, "a")]
        assert db.stats()["in_use"] == 0


def test_mysql_url() -> None:
    assert parse_url("mysql://u%40x:p%3Aw@db.local:3307/shop?charset=utf8mb4") == {
        "host": "db.local",
        "port": 3307,
        "user": "u@x",
        "password": "p:w",
        "db": "shop",
        "charset": "utf8mb4",
    }
    assert parse_url("mysql://127.0.0.1") == {"host": "127.0.0.1", "port": 3306}
    with pytest.raises(ValueError, match="mysql://"):
        parse_url("postgresql://x/y")
