"""Running blocking code off the event loop, in a bounded thread pool."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

__all__ = ["configure_thread_pool", "run_in_thread"]

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_THREADS = 40
_executor: ThreadPoolExecutor | None = None
_max_threads = DEFAULT_THREADS


def configure_thread_pool(max_threads: int) -> None:
    """Set the size of the pool used by ``run_in_thread`` and ``blocking=True`` routes.

    Takes effect for the next pool created (call it before serving).
    """
    global _max_threads, _executor
    if max_threads < 1:
        raise ValueError("max_threads must be at least 1")
    _max_threads = max_threads
    if _executor is not None:
        _executor.shutdown(wait=False)
        _executor = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=_max_threads, thread_name_prefix="veter-blocking")
    return _executor


async def run_in_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in veter's thread pool and await its result.

    Context variables (e.g. the request id) are copied into the thread. When every
    thread is busy the call waits its turn: the pool is bounded on purpose.
    """
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, fn, *args, **kwargs)
    return await loop.run_in_executor(_pool(), call)


def shutdown_thread_pool() -> None:
    """Stop the pool's threads (called when a server stops)."""
    global _executor
    if _executor is not None:
        _executor.shutdown(wait=False, cancel_futures=True)
        _executor = None


async def run_deferred(
    dispatcher: Any, handler: Callable[..., Any], request: Any, params: dict[str, Any] | None
) -> Any:
    """Runs a ``def`` handler that a saturated worker deferred (see docs/design.md,
    "Shedding"): every read of the loop iteration happened first; its cost is
    recorded to predict the wait of the requests queued behind it."""
    dispatcher._deferred_started()
    began = time.perf_counter()
    try:
        return handler(request, **params) if params else handler(request)
    finally:
        dispatcher._deferred_cost(time.perf_counter() - began)
