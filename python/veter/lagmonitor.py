"""Seeing a blocked event loop, and who blocked it.

A timer on the loop records each turn; a watchdog thread notices when the loop has
not turned for longer than the threshold, takes the loop thread's stack at that
moment (the code that is blocking, not the code that runs after), and names the
route whose handler is on it (for a hosted ASGI app: the request whose scope is on
it, by method and path, and the template its router matched). The loop's lag (how late its timer fired) is kept as
a figure for metrics.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from types import CodeType, FrameType

from veter.routing import Route

__all__ = ["LagMonitor"]

log = logging.getLogger("veter.lag")


def _code_of(handler: object) -> CodeType | None:
    while hasattr(handler, "func") and hasattr(handler, "args"):  # functools.partial
        handler = handler.func
    code = getattr(handler, "__code__", None)
    if code is None:
        code = getattr(getattr(handler, "__call__", None), "__code__", None)  # noqa: B004
    return code if isinstance(code, CodeType) else None


class LagMonitor:
    def __init__(self, routes: Iterable[Route], threshold: float, interval: float = 0.05) -> None:
        self.threshold = threshold
        self.interval = min(interval, threshold / 2)
        #: How late the loop's timer fired last time, in seconds.
        self.lag = 0.0
        #: The largest lag seen, in seconds.
        self.max_lag = 0.0
        #: Stalls longer than the threshold seen so far.
        self.stalls = 0
        self._routes = {}
        for route in routes:
            code = _code_of(route.handler)
            if code is not None:
                self._routes[code] = f"{','.join(route.methods)} {route.path}"
        self._last_turn = time.monotonic()
        self._expected = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop_thread = 0
        self._reported_at = 0.0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._last_turn = time.monotonic()
        self._schedule(loop)
        self._thread = threading.Thread(target=self._watch, name="veter-lag-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._thread is not None:
            self._thread.join(5)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._expected = time.monotonic() + self.interval
        self._handle = loop.call_later(self.interval, self._turn, loop)

    def _turn(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        self.lag = max(0.0, now - self._expected)
        self.max_lag = max(self.max_lag, self.lag)
        if self._reported_at:
            log.warning(
                "event loop ran again after being blocked for %.0f ms",
                (now - self._reported_at + self.threshold) * 1000,
            )
            self._reported_at = 0.0
        self._last_turn = now
        self._schedule(loop)

    def _watch(self) -> None:
        while not self._stop.wait(self.threshold / 4):
            stalled = time.monotonic() - self._last_turn
            if stalled > self.threshold and not self._reported_at:
                self._reported_at = time.monotonic()
                self.stalls += 1
                self._report(stalled)

    def _report(self, stalled: float) -> None:
        # sys._current_frames is the documented way to read another thread's stack.
        frame = sys._current_frames().get(self._loop_thread)
        if frame is None:
            return
        route = self._route_on(frame)
        stack = "".join(traceback.format_stack(frame))
        log.warning(
            "event loop blocked for more than %.0f ms by %s; its stack:\n%s",
            stalled * 1000,
            f"route {route}" if route else "code outside any route handler",
            stack,
        )

    def _route_on(self, frame: FrameType | None) -> str | None:
        while frame is not None:
            route = self._routes.get(frame.f_code) or _asgi_request_on(frame)
            if route is not None:
                return route
            frame = frame.f_back
        return None


def _asgi_request_on(frame: FrameType) -> str | None:
    """``GET /items/3 (/items/{item_id})`` when ``frame`` is an ASGI callable's (it
    has a ``scope`` argument that is an http or websocket scope)."""
    code = frame.f_code
    if "scope" not in code.co_varnames[: code.co_argcount]:
        return None
    scope = frame.f_locals.get("scope")
    if not isinstance(scope, dict) or scope.get("type") not in ("http", "websocket"):
        return None
    text = f"{scope.get('method', 'WEBSOCKET')} {scope.get('path', '?')}"
    template = getattr(scope.get("route"), "path", None)
    return f"{text} ({template})" if isinstance(template, str) else text
