"""Liveness and readiness: the ``/healthz`` and ``/readyz`` routes and the checks behind them.

Every app has one registry of readiness checks (``Health.of(app)``). Pools add theirs
when they are declared; an app adds its own with ``add_check``. ``enable(app)`` serves
the two routes:

- ``GET /healthz``: 200 whenever the worker's loop answers (liveness).
- ``GET /readyz``: 200 only when the startup hooks have finished, the server is not
  leaving (its drain delay) or draining, and every check passes; otherwise 503. The
  JSON body says why.

A check is a callable taking no arguments that returns ``True`` (ready) or ``False``,
or raises to say why not; it may be ``async``. Checks should be cheap: probes call them
often. Pools answer from the state their background reconnect loop keeps, without I/O.
Async checks run concurrently, each bounded by ``check_timeout``.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from veter.responses import Response, json

if TYPE_CHECKING:
    from veter.app import App

__all__ = ["Check", "Health", "NotReady", "enable"]

Check = Callable[[], bool | Awaitable[bool]]

DEFAULT_CHECK_TIMEOUT = 1.0

_registries: weakref.WeakKeyDictionary[App, Health] = weakref.WeakKeyDictionary()


class NotReady(Exception):
    """Raised by a check to fail with a reason (the exception's message)."""


class Health:
    """The readiness checks of one app."""

    def __init__(self, app: App, check_timeout: float = DEFAULT_CHECK_TIMEOUT) -> None:
        self.app = app
        self.check_timeout = _positive("check_timeout", check_timeout)
        self._checks: dict[str, Check] = {}
        self.routes: tuple[str, str] | None = None

    @classmethod
    def of(cls, app: App) -> Health:
        """The app's registry, created on first use."""
        registry = _registries.get(app)
        if registry is None:
            registry = _registries[app] = cls(app)
        return registry

    def add_check(self, name: str, check: Check) -> None:
        """Make readiness depend on ``check``; names are unique per app."""
        if name in self._checks:
            raise ValueError(f"a readiness check named {name!r} is already registered")
        if not callable(check):
            raise TypeError(f"readiness check {name!r} is not callable: {check!r}")
        self._checks[name] = check

    def remove_check(self, name: str) -> None:
        self._checks.pop(name, None)

    @property
    def check_names(self) -> list[str]:
        return list(self._checks)

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether the app is ready, and a report: the app's phase and each check's
        result (``"ok"`` or the reason it failed)."""
        if self.app.draining:
            phase = "draining"
        elif self.app.leaving:
            phase = "leaving"
        elif self.app.started:
            phase = "started"
        else:
            phase = "starting"
        names = list(self._checks)
        results = await asyncio.gather(*(self._run(self._checks[name]) for name in names))
        checks = dict(zip(names, results, strict=True))
        ready = phase == "started" and all(result == "ok" for result in results)
        return ready, {"ready": ready, "app": phase, "checks": checks}

    async def _run(self, check: Check) -> str:
        try:
            result = check()
            if inspect.isawaitable(result):
                async with asyncio.timeout(self.check_timeout):
                    result = await result
        except TimeoutError:
            return f"failing: no answer in {self.check_timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - any failure of a check is its answer
            return f"failing: {exc}" if str(exc) else f"failing: {type(exc).__name__}"
        return "ok" if result else "failing"

    # -- routes ------------------------------------------------------------------

    def mount(self, healthz: str = "/healthz", readyz: str = "/readyz") -> None:
        """Serve liveness at ``healthz`` and readiness at ``readyz``."""
        if self.routes is not None:
            raise RuntimeError(f"health routes are already served at {self.routes}")

        def live(request: Any) -> Response:
            return json({"alive": True})

        async def ready(request: Any) -> Response:
            ok, report = await self.readiness()
            return json(report, status=200 if ok else 503)

        self.app.add_route(healthz, live, ["GET"], name="veter.healthz")
        self.app.add_route(readyz, ready, ["GET"], name="veter.readyz")
        self.routes = (healthz, readyz)


def enable(
    app: App,
    *,
    healthz: str = "/healthz",
    readyz: str = "/readyz",
    check_timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> Health:
    """Serve ``/healthz`` and ``/readyz`` (paths configurable) for ``app``; returns its
    registry for ``add_check``."""
    health = Health.of(app)
    health.check_timeout = _positive("check_timeout", check_timeout)
    health.mount(healthz, readyz)
    return health


def _positive(name: str, value: float) -> float:
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)
