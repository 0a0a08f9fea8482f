"""What every pool shares: lifecycle, a bounded acquire, fail-fast and reconnection.

A pool wraps one driver's own pool (asyncpg, redis-py, asyncmy). Around it:

- **Declared once, opened per worker.** ``Pool(app, ...)`` registers startup and
  shutdown hooks, a readiness check, and ``app.state.<name>``. Each serving process
  opens its own driver pool in its startup hook.
- **States.** ``connecting`` (not reached yet) -> ``up`` <-> ``down`` (lost while
  serving) -> ``closed``. A supervisor task owns every transition to ``up``: it probes
  the database with a fresh connection, retrying with exponential backoff and jitter
  (``reconnect_initial`` doubling to ``reconnect_max``). The startup hook waits for
  the first attempt only, so a database that is down at startup never blocks the
  worker: it starts, ``/readyz`` says not ready, and the supervisor keeps trying.
- **Fail fast.** While the pool is not ``up``, ``acquire()`` raises
  ``PoolUnavailable`` at once. A connection error in a request (the database went
  away) turns the pool ``down``, wakes the supervisor, and is raised to the handler
  as ``PoolUnavailable``. Both answer 503 with ``Retry-After``.
- **Bounded waiting.** At most ``max_size`` connections are lent at once (a
  semaphore in front of the driver); a request that cannot get one within
  ``acquire_timeout`` gets ``PoolTimeout`` (503), never a hang.
- **Figures.** ``stats()`` returns a plain dict (size, open, in use, waiting,
  acquire counts and times, timeouts) for the metrics endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from veter.health import Health, NotReady
from veter.pools.errors import PoolTimeout, PoolUnavailable

if TYPE_CHECKING:
    from veter.app import App

__all__ = ["Pool"]

log = logging.getLogger("veter.pools")

C = TypeVar("C")
D = TypeVar("D")

CONNECTING, UP, DOWN, CLOSED = "connecting", "up", "down", "closed"


class Pool(ABC, Generic[D, C]):
    """Base of the database pools: ``D`` is the driver's pool, ``C`` a connection."""

    kind: ClassVar[str] = "database"

    def __init__(
        self,
        app: App | None = None,
        *,
        name: str,
        min_size: int = 1,
        max_size: int = 10,
        acquire_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        retry_after: int = 1,
        reconnect_initial: float = 0.1,
        reconnect_max: float = 5.0,
    ) -> None:
        if not name.isidentifier():
            raise ValueError(f"pool name must be an identifier (it is app.state.<name>), got {name!r}")
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size}")
        if not 0 <= min_size <= max_size:
            raise ValueError(f"min_size must be between 0 and max_size ({max_size}), got {min_size}")
        if retry_after < 0:
            raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after}")
        self.name = name
        self.min_size = min_size
        self.max_size = max_size
        self.acquire_timeout = _seconds("acquire_timeout", acquire_timeout)
        self.connect_timeout = _seconds("connect_timeout", connect_timeout)
        self.retry_after = retry_after
        self.reconnect_initial = _seconds("reconnect_initial", reconnect_initial)
        self.reconnect_max = max(_seconds("reconnect_max", reconnect_max), self.reconnect_initial)
        self._driver: D | None = None
        self._state = CONNECTING
        self._last_error: str | None = None
        self._attempts = 0
        self._slots: asyncio.Semaphore | None = None
        self._wake: asyncio.Event | None = None
        self._first_attempt: asyncio.Event | None = None
        self._up: asyncio.Event | None = None
        self._chores: set[asyncio.Task[None]] = set()
        self._supervisor: asyncio.Task[None] | None = None
        self._in_use = 0
        self._waiting = 0
        self._acquires = 0
        self._acquire_seconds = 0.0
        self._acquire_max = 0.0
        self._timeouts = 0
        self._unavailable = 0
        self._lost = 0
        if app is not None:
            self.install(app)

    # -- declaration ---------------------------------------------------------------

    def install(self, app: App) -> None:
        """Open with the app's startup, close at shutdown, gate ``/readyz``, and be
        reachable as ``app.state.<name>``."""
        if getattr(app.state, self.name, None) is not None:
            raise ValueError(f"app.state.{self.name} is already set: give this pool another name")
        setattr(app.state, self.name, self)
        app.on_startup(self.open)
        app.on_shutdown(self.close)
        Health.of(app).add_check(self.name, self.check)

    # -- driver-specific parts ---------------------------------------------------

    @abstractmethod
    async def _create(self) -> D:
        """Build the driver's pool (it may connect)."""

    @abstractmethod
    async def _close_driver(self, driver: D) -> None:
        """Close the driver's pool and every connection it holds."""

    @abstractmethod
    async def _probe(self) -> None:
        """Connect once, outside the pool, and run a trivial command; raise if it fails."""

    @abstractmethod
    async def _take(self, driver: D) -> C:
        """Take a connection from the driver's pool."""

    @abstractmethod
    async def _give_back(self, driver: D, conn: C, broken: bool) -> None:
        """Return a connection (``broken``: it failed with a connection error)."""

    @abstractmethod
    def is_connection_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the database is unreachable (not a query's own error).

        Timeouts are not: a slow query is not an outage. Only while a connection is
        being set up does a timeout count as one (see ``is_timeout``)."""

    def is_timeout(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the driver's timeout (counts as unreachable when connecting)."""
        return isinstance(exc, TimeoutError)

    def is_gone(self, exc: BaseException) -> bool:
        """Whether an error raised while using a connection means the database went
        away (a timeout, itself an ``OSError``, does not)."""
        return self.is_connection_error(exc) and not self.is_timeout(exc)

    def _open_connections(self, driver: D) -> int:
        """How many connections the driver's pool holds open (in use or idle)."""
        return self._in_use

    async def _forget_idle(self, driver: D) -> None:
        """After a lost connection: drop idle connections, which are likely dead too."""

    # -- lifecycle -------------------------------------------------------------------

    @property
    def state(self) -> str:
        """``connecting``, ``up``, ``down`` or ``closed``."""
        return self._state

    @property
    def ready(self) -> bool:
        return self._state == UP

    @property
    def last_error(self) -> str | None:
        """The last connection failure, as text (None once connected again)."""
        return self._last_error

    async def open(self) -> None:
        """Start connecting in the background; return after the first attempt (bounded
        by ``connect_timeout``), whether it succeeded or not."""
        if self._supervisor is not None:
            return
        self._state = CONNECTING
        self._slots = asyncio.Semaphore(self.max_size)
        self._wake = asyncio.Event()
        self._first_attempt = asyncio.Event()
        self._up = asyncio.Event()
        self._supervisor = asyncio.get_running_loop().create_task(
            self._supervise(), name=f"veter-pool-{self.name}"
        )
        await self._first_attempt.wait()

    async def close(self) -> None:
        """Stop reconnecting and close every connection."""
        self._state = CLOSED
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.cancel()
            try:
                await supervisor
            except asyncio.CancelledError:
                if (task := asyncio.current_task()) is not None and task.cancelling():
                    raise
        for chore in list(self._chores):
            chore.cancel()
        if self._chores:
            await asyncio.gather(*self._chores, return_exceptions=True)
        driver, self._driver = self._driver, None
        if driver is not None:
            await self._close_driver(driver)

    async def wait_ready(self) -> None:
        """Wait until the pool is up (bound it with ``asyncio.timeout``)."""
        if self._up is None:
            raise RuntimeError(f"{self._label} is not open")
        await self._up.wait()

    async def _supervise(self) -> None:
        assert self._wake is not None and self._first_attempt is not None
        while True:
            if self._state == UP:
                await self._wake.wait()
                self._wake.clear()
                continue
            try:
                async with asyncio.timeout(self.connect_timeout):
                    await self._probe()
                    if self._driver is None:
                        self._driver = await self._create()
            except Exception as exc:  # noqa: BLE001 - every failure to connect is retried
                self._attempts += 1
                self._last_error = _describe(exc)
                level = logging.WARNING if self._attempts == 1 else logging.DEBUG
                log.log(
                    level,
                    "%s: cannot connect (attempt %d): %s",
                    self._label,
                    self._attempts,
                    self._last_error,
                )
                self._first_attempt.set()
                await asyncio.sleep(self._backoff())
                continue
            if self._attempts:
                log.warning("%s: connected again after %d failed attempts", self._label, self._attempts)
            self._attempts = 0
            self._last_error = None
            self._wake.clear()
            self._state = UP
            if self._up is not None:
                self._up.set()
            self._first_attempt.set()

    def _backoff(self) -> float:
        delay = min(self.reconnect_max, self.reconnect_initial * 2.0 ** min(self._attempts - 1, 30))
        return delay * random.uniform(0.5, 1.0)

    def _mark_lost(self, exc: BaseException) -> None:
        """A request met a connection error: fail fast from now until the supervisor
        has reconnected."""
        if self._state != UP:
            return
        self._lost += 1
        self._state = DOWN
        if self._up is not None:
            self._up.clear()
        self._last_error = _describe(exc)
        log.warning(
            "%s: connection lost (%s); requests fail fast until it is back", self._label, self._last_error
        )
        if self._driver is not None:
            task = asyncio.get_running_loop().create_task(self._forget_idle(self._driver))
            self._chores.add(task)
            task.add_done_callback(self._chore_done)
        if self._wake is not None:
            self._wake.set()

    def _chore_done(self, task: asyncio.Task[None]) -> None:
        self._chores.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.debug("%s: dropping idle connections failed: %s", self._label, _describe(exc))

    def check(self) -> bool:
        """The readiness check: raises ``NotReady`` with the reason unless up."""
        if self._state == UP:
            return True
        reason = self._state + (f": {self._last_error}" if self._last_error else "")
        raise NotReady(reason)

    # -- lending ------------------------------------------------------------------------

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[C]:
        """Lend a connection for the ``async with`` block.

        Raises ``PoolUnavailable`` at once when the database is unreachable and
        ``PoolTimeout`` when no connection frees up within ``acquire_timeout``; a
        connection error inside the block is raised as ``PoolUnavailable``.
        """
        driver, conn = await self._lend()
        broken = False
        try:
            yield conn
        except Exception as exc:
            if self.is_gone(exc):
                broken = True
                raise self._lost_error(exc) from exc
            raise
        finally:
            await self._take_back(driver, conn, broken)

    async def _lend(self) -> tuple[D, C]:
        """Wait for a free slot (at most ``acquire_timeout``), then take a connection."""
        driver = self._available()
        slots = self._slots
        assert slots is not None
        started = time.perf_counter()
        if slots.locked():
            self._waiting += 1
            try:
                async with asyncio.timeout(self.acquire_timeout):
                    await slots.acquire()
            except TimeoutError:
                self._timeouts += 1
                raise PoolTimeout(
                    f"{self._label}: no connection free after {self.acquire_timeout:g} s "
                    f"({self._in_use} in use, {self._waiting - 1} others waiting)",
                    pool=self.name,
                    retry_after=self.retry_after,
                ) from None
            finally:
                self._waiting -= 1
        else:
            await slots.acquire()
        try:
            driver = self._available()  # the database may have gone while we waited
            conn = await self._take(driver)
        except BaseException as exc:
            slots.release()
            if isinstance(exc, Exception) and (self.is_connection_error(exc) or self.is_timeout(exc)):
                raise self._lost_error(exc) from exc
            raise
        waited = time.perf_counter() - started
        self._acquires += 1
        self._acquire_seconds += waited
        self._acquire_max = max(self._acquire_max, waited)
        self._in_use += 1
        return driver, conn

    async def _take_back(self, driver: D, conn: C, broken: bool) -> None:
        self._in_use -= 1
        try:
            await self._give_back(driver, conn, broken)
        except Exception as exc:  # noqa: BLE001 - the request is done; a failed return only logs
            log.warning("%s: returning a connection failed: %s", self._label, _describe(exc))
        finally:
            assert self._slots is not None
            self._slots.release()

    def _available(self) -> D:
        if self._state == UP and self._driver is not None:
            return self._driver
        self._unavailable += 1
        if self._state == CLOSED or self._slots is None:
            why = (
                "the pool is closed"
                if self._state == CLOSED
                else "the pool was never opened (is it installed on the app?)"
            )
            raise PoolUnavailable(f"{self._label}: {why}", pool=self.name, retry_after=self.retry_after)
        raise PoolUnavailable(
            f"{self._label} is unavailable ({self._state}): {self._last_error or 'not connected yet'}",
            pool=self.name,
            retry_after=self.retry_after,
        )

    def _lost_error(self, exc: BaseException) -> PoolUnavailable:
        self._mark_lost(exc)
        self._unavailable += 1
        return PoolUnavailable(
            f"{self._label}: connection lost: {_describe(exc)}", pool=self.name, retry_after=self.retry_after
        )

    # -- figures ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Pool figures for metrics: a plain dict of numbers (and the state)."""
        driver = self._driver
        return {
            "name": self.name,
            "kind": self.kind,
            "state": self._state,
            "ready": self._state == UP,
            "size": self.max_size,
            "min_size": self.min_size,
            "open": self._open_connections(driver) if driver is not None else 0,
            "in_use": self._in_use,
            "waiting": self._waiting,
            "acquires": self._acquires,
            "acquire_seconds_total": self._acquire_seconds,
            "acquire_seconds_max": self._acquire_max,
            "timeouts": self._timeouts,
            "unavailable": self._unavailable,
            "connections_lost": self._lost,
        }

    @property
    def _label(self) -> str:
        return f"{self.kind} pool {self.name!r}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self._state} {self._in_use}/{self.max_size} in use>"


def _seconds(name: str, value: float) -> float:
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, TimeoutError) and not text:
        return "timed out"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
