"""Seeing a blocked event loop, and who blocked it.

A watchdog thread (native, holding no GIL: ``veter._core.LagWatch``) notices when the
loop has not turned for longer than the threshold, without waking an idle loop to
find out: a loop waiting for events is idle, one that is not is asked to turn. When
it stays blocked past the threshold, the monitor takes the loop thread's stack at
that moment (the code that is blocking, not the code that runs after), and names the
route whose handler is on it (for a hosted ASGI app: the request whose scope is on
it, by method and path, and the template its router matched). The loop's lag is kept
as a figure for metrics: how late a once-a-second timer fired, and how long each
stall lasted.
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

from veter._core import LagWatch
from veter.routing import Route

__all__ = ["LagMonitor"]

log = logging.getLogger("veter.lag")

#: How often the loop's timer samples its lag, in seconds.
LAG_SAMPLE_SECONDS = 1.0
#: The watchdog looks at the loop this many times per threshold.
CHECKS_PER_THRESHOLD = 4


def _code_of(handler: object) -> CodeType | None:
    while hasattr(handler, "func") and hasattr(handler, "args"):  # functools.partial
        handler = handler.func
    code = getattr(handler, "__code__", None)
    if code is None:
        code = getattr(getattr(handler, "__call__", None), "__code__", None)  # noqa: B004
    return code if isinstance(code, CodeType) else None


class LagMonitor:
    def __init__(self, routes: Iterable[Route], threshold: float) -> None:
        self.threshold = threshold
        #: How late the loop's timer fired last time, or how long the last stall
        #: lasted, in seconds.
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
        self._expected = 0.0
        self._handle: asyncio.TimerHandle | None = None
        #: The native watchdog, once started.
        self.watch: LagWatch | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._schedule(loop)
        period = self.threshold / CHECKS_PER_THRESHOLD
        self.watch = LagWatch(self.threshold, period, threading.get_native_id(), self._on_stall)
        loop.add_reader(self.watch.fileno(), self.watch.answer)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self.watch is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self.watch.fileno())
            self.watch.stop()

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._expected = time.monotonic() + LAG_SAMPLE_SECONDS
        self._handle = loop.call_later(LAG_SAMPLE_SECONDS, self._sample, loop)

    def _sample(self, loop: asyncio.AbstractEventLoop) -> None:
        self._record(max(0.0, time.monotonic() - self._expected))
        self._schedule(loop)

    def _record(self, lag: float) -> None:
        self.lag = lag
        self.max_lag = max(self.max_lag, lag)

    def _on_stall(self, stalled: float) -> None:
        """From the watchdog thread: the loop has been blocked for ``stalled`` seconds."""
        started = time.monotonic() - stalled
        self.stalls += 1
        self._report(stalled)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._resumed, started)

    def _resumed(self, started: float) -> None:
        """On the loop, first thing once it turns again after a reported stall."""
        blocked = time.monotonic() - started
        self._record(blocked)
        log.warning("event loop ran again after being blocked for %.0f ms", blocked * 1000)

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
