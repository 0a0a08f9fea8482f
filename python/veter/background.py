"""Background tasks: work a handler leaves to run after its answer is sent.

A typed handler (or a dependency) declares a parameter typed ``BackgroundTasks``
and adds calls to it; when the handler returns, the calls run one after another
in a task of their own, once the answer has been sent (written to the
connection; for a streamed answer, its whole body):
``async def`` functions awaited, plain functions in veter's thread pool. They run
with the request as the current one, so their log records carry its request id;
a failure is logged (``veter.error``) and the next call still runs. A handler
that raises schedules nothing. A stopping server waits for them as part of its
drain (``graceful_timeout``), then cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from veter.concurrency import run_in_thread
from veter.context import request_var

__all__ = ["BackgroundTasks", "after_answer", "drain", "wait_idle"]

log = logging.getLogger("veter.error")

#: Tasks running background calls, and schedules not yet started, per loop.
_running: set[asyncio.Task[None]] = set()
_scheduled: dict[asyncio.AbstractEventLoop, int] = {}


class BackgroundTasks:
    """Calls to make after the answer is sent, in the order added."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []

    def add_task(self, func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """Call ``func(*args, **kwargs)`` after the answer is sent."""
        if not callable(func):
            raise TypeError(f"add_task() takes a callable, not {func!r}")
        self._calls.append((func, args, kwargs))

    def __len__(self) -> int:
        return len(self._calls)

    def __repr__(self) -> str:
        return f"BackgroundTasks({[getattr(f, '__qualname__', f) for f, _, _ in self._calls]})"

    def schedule(self, request: Any, answer: Any = None) -> None:
        """Make the calls once ``answer`` to ``request`` has been sent."""
        if self._calls:
            after_answer(request, answer, functools.partial(_run, self._calls))

    async def run(self) -> None:
        """Make the calls now, in order (failures logged)."""
        await _run(self._calls)


def after_answer(request: Any, answer: Any, job: Callable[[], Awaitable[None]]) -> None:
    """Run ``job()`` in a task of its own once ``answer`` has been sent: at the end
    of its body for a streamed answer, else once it has been written.

    A handler's answer is written by a callback the loop runs after the handler's
    last step (or at once, for a plain ``def`` handler): two hops of ``call_soon``
    from inside the handler land behind it, even where tasks start eagerly (3.12's
    eager task factory runs a new task's first step at once, so one hop would not
    do). The job runs with ``request`` as the current request (its logs carry the
    request id); a stopping server waits for it (``drain``)."""
    loop = asyncio.get_running_loop()
    _scheduled[loop] = _scheduled.get(loop, 0) + 1
    context = contextvars.copy_context()
    context.run(request_var.set, request)
    when_finished = getattr(answer, "_veter_when_finished", None)
    if when_finished is not None:
        when_finished(functools.partial(_start, loop, job, context))
    else:
        loop.call_soon(loop.call_soon, _start, loop, job, context)


def _start(
    loop: asyncio.AbstractEventLoop, job: Callable[[], Awaitable[None]], context: contextvars.Context
) -> None:
    _scheduled[loop] -= 1
    if not _scheduled[loop]:
        del _scheduled[loop]
    task = loop.create_task(_guarded(job), context=context)
    _running.add(task)
    task.add_done_callback(_running.discard)


async def _guarded(job: Callable[[], Awaitable[None]]) -> None:
    try:
        await job()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("work after the answer failed")


async def _run(calls: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]) -> None:
    for func, args, kwargs in calls:
        try:
            if _is_async(func):
                await func(*args, **kwargs)
            else:
                result = await run_in_thread(func, *args, **kwargs)
                if inspect.isawaitable(result):
                    await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background task %s failed", getattr(func, "__qualname__", func))


def _is_async(func: Callable[..., Any]) -> bool:
    target = func if inspect.isroutine(func) else getattr(type(func), "__call__", func)  # noqa: B004
    return inspect.iscoroutinefunction(target)


def _of_loop(loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[None]]:
    return [t for t in _running if t.get_loop() is loop]


async def wait_idle() -> None:
    """Until every background call scheduled on this loop has finished (the test
    client waits for them before it hands back an answer)."""
    loop = asyncio.get_running_loop()
    spins = 0
    # A schedule waits two loop turns (or the end of a streamed body, which the
    # client has read by now): a few idle turns are enough, and a schedule whose
    # answer was never sent (replaced by a 504, say) cannot hold this forever.
    while (_scheduled.get(loop) and spins < 10) or _of_loop(loop):
        tasks = _of_loop(loop)
        if tasks:
            spins = 0
            await asyncio.gather(*tasks, return_exceptions=True)
        else:
            spins += 1
            await asyncio.sleep(0)


async def drain(seconds: float) -> None:
    """Wait up to ``seconds`` for this loop's background calls, then
    cancel the rest (a stopping server's last step before its shutdown hooks)."""
    try:
        await asyncio.wait_for(wait_idle(), max(0.0, seconds))
    except TimeoutError:
        left = _of_loop(asyncio.get_running_loop())
        log.warning("graceful timeout: cancelled %d background task(s)", len(left))
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
