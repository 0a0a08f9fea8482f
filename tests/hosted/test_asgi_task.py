"""What the task a hosted ASGI app runs in gives it, whichever way the core drives
the app's coroutine (on Python 3.11, and with eager tasks after a run that
suspended, from Rust, ``_AsgiRun``; otherwise as it is): ``current_task()``, the request in the context and a context of its own per
request, cancellation by the deadline, what it raises answered and logged, and no
reference left behind (checked by counts, before and after)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import sys
import weakref
from typing import Any

import pytest

from tests.polling import eventually
from tests.test_protocol import drive, get, parse_all
from veter.context import current_request, request_var
from veter.hosted import AsgiApp

_HEAD = [(b"content-type", b"text/plain")]

seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


async def answer(send: Any, text: str, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _HEAD})
    await send({"type": "http.response.body", "body": text.encode()})


async def read(transport: Any, answers: int) -> list[str]:
    while len(parse_all(bytes(transport.data))) < answers:
        await transport.changed()
    return parse_all(bytes(transport.data))


@pytest.mark.parametrize("suspend", [False, True])
async def test_the_app_runs_in_its_task(suspend: bool) -> None:
    tasks: dict[str, list[asyncio.Task[Any] | None]] = {"/a": [], "/b": []}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        tasks[scope["path"]].append(asyncio.current_task())
        if suspend:
            await asyncio.sleep(0)
        tasks[scope["path"]].append(asyncio.current_task())
        await answer(send, "ok")

    transport, _ = await drive(AsgiApp(app), get("/a") + get("/b"))
    assert await read(transport, 2) == ["ok", "ok"]
    (a, a_later), (b, b_later) = tasks["/a"], tasks["/b"]
    assert a is not None and b is not None
    assert a is a_later and b is b_later and a is not b
    transport.close()


async def test_an_app_whose_last_run_suspended_is_stepped_by_the_core() -> None:
    # With eager tasks, the app's coroutine runs as it is while its runs end in the
    # eager start, and is stepped by `_AsgiRun` (its end told from inside the task,
    # no done callback's loop turn) after a run that suspended. Without them (3.11)
    # it is always stepped.
    drivers: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        drivers.append(type(task.get_coro()).__name__)
        if scope["path"] == "/suspends":
            await asyncio.sleep(0)
        await answer(send, "ok")

    paths = ["/suspends", "/suspends", "/now", "/now", "/suspends"]
    transport, _ = await drive(AsgiApp(app), b"".join(get(p) for p in paths))
    assert await read(transport, 5) == ["ok"] * 5
    if sys.version_info >= (3, 12):
        assert drivers == ["coroutine", "_AsgiRun", "_AsgiRun", "coroutine", "coroutine"]
    else:
        assert drivers == ["_AsgiRun"] * 5
    transport.close()


@pytest.mark.parametrize("suspend", [False, True])
async def test_each_request_has_its_own_context(suspend: bool) -> None:
    found: list[tuple[str, str | None]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = current_request()
        found.append((seen.get(), request.id if request is not None else None))
        seen.set(scope["path"])  # must not leak into the next request
        if suspend:
            await asyncio.sleep(0)
        await answer(send, seen.get())

    transport, _ = await drive(AsgiApp(app), get("/a") + get("/b"))
    assert await read(transport, 2) == ["/a", "/b"]
    assert [value for value, _ in found] == ["unset", "unset"]
    ids = [request_id for _, request_id in found]
    assert all(ids) and ids[0] != ids[1]
    assert seen.get() == "unset"
    transport.close()


@pytest.mark.parametrize("suspend", [False, True])
async def test_what_the_app_raises_is_answered_and_logged(
    suspend: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if suspend:
            await asyncio.sleep(0)
        if scope["path"] == "/after":
            await answer(send, "stands")
        raise ValueError(f"broken at {scope['path']}")

    transport, _ = await drive(AsgiApp(app), get("/before") + get("/after"))
    answers = await read(transport, 2)
    assert answers == ["Internal Server Error", "stands"]
    await eventually(lambda: len([r for r in caplog.records if "broken at" in r.getMessage()]) == 2)
    transport.close()


async def test_a_cancelled_app_sees_it_and_its_cleanup_runs() -> None:
    # What a deadline does to the app's task (``cancel``), done here at once.
    cleaned: list[str] = []
    running: list[asyncio.Task[Any] | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        running.append(asyncio.current_task())
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise
        finally:
            cleaned.append("finally")

    transport, conn = await drive(AsgiApp(app), get("/"))
    await eventually(lambda: bool(running))
    task = running[0]
    assert task is not None
    task.cancel()
    await eventually(lambda: task.done())
    assert task.cancelled()
    assert cleaned == ["cancelled", "finally"]
    assert await read(transport, 1) == ["Internal Server Error"]
    await eventually(lambda: not conn.in_flight)
    transport.close()


async def test_a_cancelled_app_that_goes_on_is_driven_to_its_end() -> None:
    # An app that catches CancelledError and answers anyway: the task goes on with
    # it (through ``throw``) to its end.
    running: list[asyncio.Task[Any] | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        running.append(asyncio.current_task())
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            await answer(send, "went on")

    transport, conn = await drive(AsgiApp(app), get("/"))
    await eventually(lambda: bool(running))
    task = running[0]
    assert task is not None
    task.cancel()
    assert await read(transport, 1) == ["went on"]
    await eventually(lambda: task.done() and not conn.in_flight)
    assert not task.cancelled()
    transport.close()


async def test_nothing_the_app_returns_yields_or_holds_is_kept() -> None:
    # The steps of the app's coroutine hand over references (what it yields to the
    # task, what it returns): each is released once. A reference kept would show in
    # the counts; one released twice would crash or corrupt them.
    returned = object()
    frames: list[weakref.ref[Any]] = []
    futures: list[asyncio.Future[None]] = []

    class Held:
        pass

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> object:
        held = Held()
        frames.append(weakref.ref(held))
        future = asyncio.get_running_loop().create_future()
        futures.append(future)
        future.get_loop().call_soon(future.set_result, None)
        await future  # yields the future to the task
        await answer(send, "ok")
        return returned

    gc.collect()
    before = sys.getrefcount(returned)
    transport, conn = await drive(AsgiApp(app), get("/") * 50)
    assert await read(transport, 50) == ["ok"] * 50
    await eventually(lambda: not conn.in_flight and all(ref() is None for ref in frames))
    assert sys.getrefcount(returned) == before
    assert all(ref() is None for ref in frames)
    # Each future awaited once is held as a future never awaited is: by the list only.
    futures.append(asyncio.get_running_loop().create_future())
    counts = [sys.getrefcount(future) for future in futures]
    assert counts == [counts[-1]] * len(futures)
    transport.close()


async def test_the_request_in_the_context_leaves_no_reference() -> None:
    # The core sets and resets `request_var` through the C API
    # (src/ffi/context_var.rs): each token is released once (a token kept holds the
    # variable, so its count would grow by one a request), and the request leaves
    # the context that the core set it in.
    requests: list[Any] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        requests.append(current_request())
        await answer(send, "ok")

    transport, conn = await drive(AsgiApp(app), get("/"))
    assert await read(transport, 1) == ["ok"]
    await eventually(lambda: not conn.in_flight)
    gc.collect()
    before = sys.getrefcount(request_var)  # the dispatcher holds it too
    conn.data_received(get("/") * 50)
    assert await read(transport, 51) == ["ok"] * 51
    await eventually(lambda: not conn.in_flight)
    gc.collect()
    assert sys.getrefcount(request_var) == before
    assert request_var.get(None) is None
    assert len({id(request) for request in requests}) == 51
    counts = [sys.getrefcount(request) for request in requests]
    assert counts == [counts[0]] * len(counts)
    transport.close()
