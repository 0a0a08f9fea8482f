"""PostgreSQL through asyncpg's pool (``pip install veter[postgres]``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import asyncpg  # type: ignore[import-untyped]
import asyncpg.exceptions as pgerr  # type: ignore[import-untyped]

from veter.pools.base import Pool

if TYPE_CHECKING:
    from veter.app import App

__all__ = ["PostgresPool"]

# What means "the server is unreachable", as opposed to an error in a query: socket
# errors, a connection the server closed, the server shutting down or starting up.
# InternalClientError is asyncpg finding its protocol state inconsistent, which is
# what a connection the server dropped mid-operation can look like: the connection
# is unusable either way.
_UNREACHABLE: tuple[type[BaseException], ...] = (
    pgerr.InternalClientError,
    OSError,
    pgerr.ConnectionDoesNotExistError,
    pgerr.PostgresConnectionError,
    pgerr.AdminShutdownError,
    pgerr.CrashShutdownError,
    pgerr.CannotConnectNowError,
)


class PostgresPool(Pool[Any, Any]):
    """A PostgreSQL pool for one database, on asyncpg.

    ``dsn`` is a libpq URL (``postgresql://user:pass@host:5432/db``). ``query_timeout``
    bounds each query (asyncpg's ``command_timeout``); ``options`` go to
    ``asyncpg.create_pool`` as they are (``server_settings``, ``ssl``, ``init``...).

    In a handler::

        async with request.app.state.pg.acquire() as conn:
            row = await conn.fetchrow("SELECT ...", item_id)
        # or, for one statement: await request.app.state.pg.fetchrow("SELECT ...", item_id)
    """

    kind = "postgres"

    def __init__(
        self,
        app: App | None = None,
        *,
        dsn: str,
        name: str = "pg",
        min_size: int = 1,
        max_size: int = 10,
        acquire_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        query_timeout: float | None = 30.0,
        retry_after: int = 1,
        reconnect_initial: float = 0.1,
        reconnect_max: float = 5.0,
        **options: Any,
    ) -> None:
        self.dsn = dsn
        self.query_timeout = query_timeout
        self.options = options
        super().__init__(
            app,
            name=name,
            min_size=min_size,
            max_size=max_size,
            acquire_timeout=acquire_timeout,
            connect_timeout=connect_timeout,
            retry_after=retry_after,
            reconnect_initial=reconnect_initial,
            reconnect_max=reconnect_max,
        )

    async def _create(self) -> Any:
        return await asyncpg.create_pool(
            self.dsn,
            min_size=self.min_size,
            max_size=self.max_size,
            timeout=self.connect_timeout,
            command_timeout=self.query_timeout,
            **self.options,
        )

    async def _close_driver(self, driver: Any) -> None:
        await driver.close()

    async def _probe(self) -> None:
        conn = await asyncpg.connect(self.dsn, timeout=self.connect_timeout, **_connect_options(self.options))
        try:
            await conn.fetchval("SELECT 1")
        finally:
            await conn.close()

    async def _take(self, driver: Any) -> Any:
        return await driver.acquire()

    async def _give_back(self, driver: Any, conn: Any, broken: bool) -> None:
        # asyncpg's release terminates a broken connection itself (and replaces it
        # on the next acquire).
        await driver.release(conn)

    async def _forget_idle(self, driver: Any) -> None:
        await driver.expire_connections()

    def _open_connections(self, driver: Any) -> int:
        size: int = driver.get_size()
        return size

    def is_connection_error(self, exc: BaseException) -> bool:
        return isinstance(exc, _UNREACHABLE)

    # -- one-statement helpers (acquire, run, release) ------------------------------
    # Each query is bounded by ``query_timeout``; for another bound on one query use
    # ``acquire()`` and asyncpg's own ``timeout=`` argument.

    async def execute(self, query: str, *args: Any) -> str:
        async with self.acquire() as conn:
            status: str = await conn.execute(query, *args)
            return status

    async def executemany(self, query: str, args: Sequence[Sequence[Any]]) -> None:
        async with self.acquire() as conn:
            await conn.executemany(query, args)

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        async with self.acquire() as conn:
            rows: list[Any] = await conn.fetch(query, *args)
            return rows

    async def fetchrow(self, query: str, *args: Any) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any, column: int = 0) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(query, *args, column=column)

    @asynccontextmanager
    async def transaction(self, **options: Any) -> AsyncIterator[Any]:
        """A connection inside a transaction: committed when the block ends, rolled
        back if it raises. ``options`` go to asyncpg (``isolation``, ``readonly``...)."""
        async with self.acquire() as conn, conn.transaction(**options):
            yield conn


def _connect_options(options: dict[str, Any]) -> dict[str, Any]:
    """The create_pool options that asyncpg.connect also takes (the probe's connection
    must authenticate and negotiate like the pool's)."""
    pool_only = {
        "setup",
        "init",
        "reset",
        "max_queries",
        "max_inactive_connection_lifetime",
        "connection_class",
    }
    return {key: value for key, value in options.items() if key not in pool_only}
