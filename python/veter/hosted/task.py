"""The coroutine a hosted ASGI app's request runs in on Python 3.11: the app's call,
awaited, and its end told to the request's cycle from inside the task.

Without eager tasks every task ends through the loop. A done-callback on it would be
scheduled through the loop (a handle, a loop turn's call) and then ask the task for
its exception (a method call); telling the cycle from here costs one call, made as
the app's coroutine returns or raises. (With eager tasks, 3.12+, an app that does
not suspend ends in its eager start, where the core asks the task at once, which
costs less than this extra coroutine: there the app runs as it is.)

An app's exception is handled here (the cycle answers 500 if nothing was sent, and
logs it through the app's error handler either way), so the task ends normally. A
``BaseException`` that is not an ``Exception`` (``CancelledError``, ``SystemExit``,
``KeyboardInterrupt``) is told to the cycle too and then raised again: the task ends
as cancelled, the interpreter exits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["run_app"]


class _Cycle(Protocol):
    def _veter_done(self, exc: BaseException | None, /) -> None: ...


async def run_app(
    app: Callable[[Any, Any, Any], Awaitable[None]],
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    cycle: _Cycle,
) -> None:
    """Runs ``app(scope, receive, send)`` and tells ``cycle`` how it ended."""
    try:
        await app(scope, receive, send)
    except BaseException as exc:
        cycle._veter_done(exc)
        if not isinstance(exc, Exception):
            raise
    else:
        cycle._veter_done(None)
