"""The coroutine a suspending handler's task runs when it is not started eagerly
(Python 3.11, whose asyncio has no eager tasks): the handler's coroutine (or a hosted
ASGI app's), awaited, and its result or exception handed to the request's completion
(or the app's cycle, which needs only the exception) from inside the task.

A done-callback on the task would be scheduled through the loop (a handle run in a
later turn) and then ask the task for its result (a method call); handing the result
over from here costs one call, made as the handler returns or raises. With eager
tasks (3.12+) a handler that does not suspend ends in its eager start, where the
core asks the task at once, so there the handler's coroutine runs as it is.

The handler's ``Exception`` is handed over (the core answers with the app's error
handler, as for a ``def`` handler) and the task ends normally; a ``BaseException``
that is not an ``Exception`` (``CancelledError`` from a deadline, ``SystemExit``,
``KeyboardInterrupt``) is handed over and raised again.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

__all__ = ["run_handler"]


class _Completion(Protocol):
    def _veter_done(self, result: Any, exc: BaseException | None, /) -> None: ...


async def run_handler(coro: Awaitable[Any], completion: _Completion) -> None:
    """Awaits ``coro`` and hands ``completion`` what it returned or raised."""
    try:
        result = await coro
    except BaseException as exc:
        completion._veter_done(None, exc)
        if not isinstance(exc, Exception):
            raise
    else:
        completion._veter_done(result, None)
