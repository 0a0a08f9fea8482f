"""Redis through redis-py's asyncio client, with hiredis (``pip install veter[redis]``).

redis-py takes a connection from its pool for every command (or pipeline) and gives
it back at once, so the veter gate sits inside that pool: each command waits at most
``acquire_timeout`` for a connection, fails fast while Redis is unreachable, and is
counted in ``stats()``. Handlers use an ordinary ``redis.asyncio.Redis``::

    await request.app.state.redis.client.set("key", "value")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
import redis.exceptions as rexc

from veter.pools.base import Pool

if TYPE_CHECKING:
    from veter.app import App

__all__ = ["RedisPool"]

# A command's timeout (rexc.TimeoutError) is not an outage: redis-py drops that
# connection and the next command reconnects.
_UNREACHABLE: tuple[type[BaseException], ...] = (OSError, rexc.ConnectionError)


class _GatedConnectionPool(aioredis.ConnectionPool):
    """redis-py's pool, lending through the owning ``RedisPool``'s gate."""

    def __init__(self, owner: RedisPool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.owner = owner
        self.lent: set[Any] = set()

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> Any:
        conn = await self.owner.lend()
        self.lent.add(conn)
        return conn

    async def take(self) -> Any:
        """redis-py's own lending (connects or reconnects as needed)."""
        return await super().get_connection()  # type: ignore[no-untyped-call]

    async def release(self, connection: Any) -> None:
        if connection in self.lent:
            self.lent.discard(connection)
            await self.owner.take_back(connection)
        else:  # redis-py giving back a connection it failed to set up
            await super().release(connection)

    async def give_back(self, connection: Any) -> None:
        await super().release(connection)


class _Pipeline(aioredis.client.Pipeline):
    owner: RedisPool

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            return await super().execute(raise_on_error)
        except _UNREACHABLE as exc:
            if not self.owner.is_gone(exc):
                raise
            raise self.owner.lost_error(exc) from exc


class _Client(aioredis.Redis):
    owner: RedisPool

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except _UNREACHABLE as exc:
            if not self.owner.is_gone(exc):
                raise
            raise self.owner.lost_error(exc) from exc

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> _Pipeline:
        pipe = _Pipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.owner = self.owner
        return pipe


class RedisPool(Pool[_GatedConnectionPool, Any]):
    """A Redis connection pool on redis-py (hiredis parses replies when installed).

    ``url`` is a redis URL (``redis://[:password@]host:6379/0``, ``rediss://``,
    ``unix://``). ``command_timeout`` bounds each command's socket reads;
    ``options`` go to redis-py's connections (``decode_responses=True``...).
    ``client`` is the ``redis.asyncio.Redis`` to use in handlers.
    """

    kind = "redis"

    def __init__(
        self,
        app: App | None = None,
        *,
        url: str,
        name: str = "redis",
        min_size: int = 0,
        max_size: int = 10,
        acquire_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        command_timeout: float | None = 30.0,
        retry_after: int = 1,
        reconnect_initial: float = 0.1,
        reconnect_max: float = 5.0,
        **options: Any,
    ) -> None:
        self.url = url
        self.command_timeout = command_timeout
        self.options = options
        self._client: _Client | None = None
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

    @property
    def client(self) -> aioredis.Redis:
        """The Redis client for handlers (its commands go through this pool)."""
        if self._client is None:
            raise RuntimeError(f"{self._label} is not open: install it on the app (RedisPool(app, ...))")
        return self._client

    def _kwargs(self) -> dict[str, Any]:
        return {
            "socket_connect_timeout": self.connect_timeout,
            "socket_timeout": self.command_timeout,
            **self.options,
        }

    async def open(self) -> None:
        gated = _GatedConnectionPool.from_url(
            self.url, owner=self, max_connections=self.max_size, **self._kwargs()
        )
        client = _Client(connection_pool=gated)
        client.owner = self
        self._client = client
        self._gated = gated
        await super().open()

    async def close(self) -> None:
        await super().close()
        if self._client is not None:
            await self._client.aclose()
            await self._gated.disconnect()
            self._client = None

    async def _create(self) -> _GatedConnectionPool:
        for _ in range(self.min_size):  # warm connections
            conn = await self._gated.take()
            await self._gated.give_back(conn)
        return self._gated

    async def _close_driver(self, driver: _GatedConnectionPool) -> None:
        await driver.disconnect()

    async def _probe(self) -> None:
        probe = aioredis.Redis.from_url(self.url, **self._kwargs())
        try:
            await probe.ping()
        finally:
            await probe.aclose()

    async def _take(self, driver: _GatedConnectionPool) -> Any:
        return await driver.take()

    async def _give_back(self, driver: _GatedConnectionPool, conn: Any, broken: bool) -> None:
        if broken:
            await conn.disconnect()
        await driver.give_back(conn)

    async def _forget_idle(self, driver: _GatedConnectionPool) -> None:
        await driver.disconnect(inuse_connections=False)

    def _open_connections(self, driver: _GatedConnectionPool) -> int:
        return sum(
            1 for conn in (*driver._available_connections, *driver._in_use_connections) if conn.is_connected
        )

    def is_connection_error(self, exc: BaseException) -> bool:
        return isinstance(exc, _UNREACHABLE)

    def is_timeout(self, exc: BaseException) -> bool:
        return isinstance(exc, TimeoutError | rexc.TimeoutError)

    # -- the gate, for _GatedConnectionPool ------------------------------------------

    async def lend(self) -> Any:
        _, conn = await self._lend()
        return conn

    async def take_back(self, conn: Any) -> None:
        await self._take_back(self._gated, conn, broken=False)

    def lost_error(self, exc: BaseException) -> Exception:
        return self._lost_error(exc)
