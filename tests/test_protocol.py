"""The Rust protocol driven directly over an in-memory transport.

These tests see what a socket test cannot: how many transport writes a batch of
pipelined requests costs, and how reading is paused and resumed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

import veter
from veter.testing import MemoryTransport, _ResponseReader


class CountingTransport(MemoryTransport):
    def __init__(self, protocol: asyncio.Protocol) -> None:
        super().__init__(protocol, ("127.0.0.1", 1))
        self.writes = 0
        self.pauses = 0
        self.resumes = 0

    def write(self, data: Any) -> None:
        self.writes += 1
        super().write(data)

    def pause_reading(self) -> None:
        self.pauses += 1
        super().pause_reading()

    def resume_reading(self) -> None:
        self.resumes += 1
        super().resume_reading()


def app_with_routes() -> veter.App:
    app = veter.App()
    app.add_route("/", lambda request: "hi")

    @app.get("/wait/{ms:int}")
    async def wait(request: veter.Request, ms: int) -> str:
        await asyncio.sleep(ms / 1000)
        return f"waited {ms}"

    @app.get("/async-now")
    async def async_now(request: veter.Request) -> str:
        return "now"

    return app


def parse_all(data: bytes) -> list[str]:
    out = []
    while data:
        parsed = _ResponseReader(False).parse(data, True)
        assert parsed is not None
        out.append(parsed[0].text)
        data = data[parsed[1] :]
    return out


async def drive(app: veter.App, raw: bytes, **settings: Any) -> tuple[CountingTransport, Any]:
    dispatcher = app.build_dispatcher(app.config.with_(**settings))
    conn = dispatcher()
    transport = CountingTransport(conn)
    conn.connection_made(transport)
    conn.data_received(raw)
    return transport, conn


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode()


async def test_ready_responses_share_one_write() -> None:
    # async handlers that do not suspend are ready at once only with eager tasks.
    eager = sys.version_info >= (3, 12)
    raw = get("/") * 16 + (get("/async-now") * 4 if eager else b"")
    transport, _ = await drive(app_with_routes(), raw)
    assert transport.writes == 1
    assert parse_all(bytes(transport.data)) == ["hi"] * 16 + (["now"] * 4 if eager else [])
    transport.close()


async def test_responses_behind_a_slow_one_wait_in_order() -> None:
    transport, conn = await drive(app_with_routes(), get("/") + get("/wait/20") + get("/") * 3)
    assert transport.writes == 1  # only the first response could go out
    assert parse_all(bytes(transport.data)) == ["hi"]
    assert conn.in_flight == 1
    while conn.in_flight:
        await transport.changed()
    assert parse_all(bytes(transport.data)) == ["hi", "waited 20", "hi", "hi", "hi"]
    assert transport.writes == 2
    transport.close()


async def test_answers_tasks_finish_in_one_iteration_share_one_write() -> None:
    # Both handlers suspend once and finish in the same loop iteration: their
    # answers are written together when that iteration's callbacks are done, not
    # one write per task as each finishes (which woke the reader once per answer).
    transport, conn = await drive(app_with_routes(), get("/wait/0") * 3)
    while conn.in_flight or len(parse_all(bytes(transport.data))) < 3:
        await transport.changed()
    assert parse_all(bytes(transport.data)) == ["waited 0"] * 3
    assert transport.writes == 1
    transport.close()


async def test_hosted_answers_finished_together_share_one_write() -> None:
    from veter.hosted import AsgiApp

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.sleep(0)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    transport, _ = await drive(AsgiApp(app), get("/") * 3)
    while len(parse_all(bytes(transport.data))) < 3:
        await transport.changed()
    assert parse_all(bytes(transport.data)) == ["ok"] * 3
    assert transport.writes == 1
    transport.close()


class TickCounter:
    """Counts the loop's iterations: a callback that schedules itself again."""

    def __init__(self) -> None:
        self.count = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


class WhenTransport(CountingTransport):
    """Notes each write: (iteration, whether a task made it)."""

    def __init__(self, protocol: asyncio.Protocol, ticks: TickCounter) -> None:
        super().__init__(protocol)
        self.ticks = ticks
        self.when: list[tuple[int, bool]] = []

    def write(self, data: Any) -> None:
        self.when.append((self.ticks.count, asyncio.current_task() is not None))
        super().write(data)


async def _hosted_connections(count: int) -> tuple[list[Any], list[WhenTransport], TickCounter]:
    from veter.hosted import AsgiApp

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.sleep(0)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    dispatcher = AsgiApp(app).build_dispatcher()
    ticks = TickCounter()
    conns, transports = [], []
    for _ in range(count):
        conn = dispatcher()
        transport = WhenTransport(conn, ticks)
        conn.connection_made(transport)
        conns.append(conn)
        transports.append(transport)
    return conns, transports, ticks


async def test_the_first_answer_an_iteration_finishes_is_written_at_once() -> None:
    # Four connections read in one loop turn, their tasks finishing in one later
    # iteration: the first answer goes out from its task, the other three together
    # from the end-of-iteration callback, in one iteration (not one write per task
    # spread over the iteration). Then a lone request: written from its task.
    conns, transports, ticks = await _hosted_connections(4)
    for conn in conns:
        conn.data_received(get("/"))
    for transport in transports:
        while not transport.when:
            await transport.changed()
    whens = sorted(w for t in transports for w in t.when)
    assert [in_task for _, in_task in whens] == [True, False, False, False]
    assert len({iteration for iteration, in_task in whens if not in_task}) == 1
    conns[1].data_received(get("/"))
    while len(transports[1].when) < 2:
        await transports[1].changed()
    assert transports[1].when[1][1]  # made by the task
    assert [parse_all(bytes(t.data)) for t in transports] == [["ok"], ["ok", "ok"], ["ok"], ["ok"]]
    ticks.stop()
    for transport in transports:
        transport.close()


async def test_reading_pauses_at_max_pipelined() -> None:
    raw = b"".join(get(f"/wait/{5 + i}") for i in range(6))
    transport, conn = await drive(app_with_routes(), raw, max_pipelined=2)
    assert conn.in_flight == 2
    assert transport.pauses == 1
    while len(parse_all(bytes(transport.data))) < 6:
        await transport.changed()
    assert parse_all(bytes(transport.data)) == [f"waited {5 + i}" for i in range(6)]
    assert transport.resumes >= 1
    assert transport.reading
    transport.close()


async def test_write_backpressure_pauses_reading() -> None:
    transport, conn = await drive(app_with_routes(), get("/"))
    conn.pause_writing()
    assert transport.pauses == 1
    conn.resume_writing()
    assert transport.resumes == 1
    transport.close()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks exist from Python 3.12")
async def test_eager_handler_costs_no_task_when_it_does_not_suspend() -> None:
    app = veter.App()
    pending: list[int] = []

    @app.get("/")
    async def handler(request: veter.Request) -> str:
        task = asyncio.current_task()
        assert task is not None  # a real Task, even when eager
        pending.append(len([t for t in asyncio.all_tasks() if not t.done()]))
        return "eager"

    dispatcher = app.build_dispatcher()
    assert dispatcher.eager_tasks
    transport, _ = await drive(app, get("/"))
    # The handler finished inside data_received: the response is already written.
    assert parse_all(bytes(transport.data)) == ["eager"]
    transport.close()


async def test_a_handlers_task_is_named_for_what_it_runs() -> None:
    app = veter.App()

    @app.get("/")
    async def handler(request: veter.Request) -> str:
        task = asyncio.current_task()
        return task.get_name() if task is not None else "no task"

    transport, _ = await drive(app, get("/"))
    while not transport.data:
        await transport.changed()
    assert parse_all(bytes(transport.data)) == ["veter-request"]
    transport.close()


async def test_a_loops_task_factory_makes_the_handlers_tasks() -> None:
    """Instrumentation that wraps task creation sees every handler's task."""
    loop = asyncio.get_running_loop()
    made: list[asyncio.Task[Any]] = []

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        made.append(task)
        return task

    app = veter.App()

    @app.get("/")
    async def handler(request: veter.Request) -> str:
        return "made" if asyncio.current_task() in made else "not made by the factory"

    loop.set_task_factory(factory)
    try:
        transport, _ = await drive(app, get("/"))
        while not transport.data:
            await transport.changed()
    finally:
        loop.set_task_factory(None)
    assert parse_all(bytes(transport.data)) == ["made"]
    transport.close()


async def test_async_handler_is_a_real_task() -> None:
    """asyncio.timeout, current_task, contextvars and cancellation all need a Task."""
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    app = veter.App()

    @app.get("/")
    async def handler(request: veter.Request) -> dict[str, object]:
        var.set("mine")
        outcome = "no-timeout"
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            outcome = "timed-out"
        child = asyncio.create_task(asyncio.sleep(0, result=var.get()))
        return {"timeout": outcome, "child_sees": await child, "task": asyncio.current_task() is not None}

    transport, _ = await drive(app, get("/"))
    while not transport.data:
        await transport.changed()
    reader = _ResponseReader(False).parse(bytes(transport.data), False)
    assert reader is not None
    assert reader[0].json() == {"timeout": "timed-out", "child_sees": "mine", "task": True}
    assert var.get() == "unset"  # the handler's context did not leak into ours
    transport.close()


async def test_handler_works_with_anyio_cancel_scopes() -> None:
    """anyio's cancel scopes rely on current_task() and task cancellation: they
    must work in a handler whether it started eagerly or not."""
    import anyio
    import anyio.lowlevel

    app = veter.App()

    @app.get("/")
    async def handler(request: veter.Request) -> dict[str, object]:
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep(1)
        async with anyio.create_task_group() as tg:
            results: list[int] = []

            async def work(n: int) -> None:
                await anyio.lowlevel.checkpoint()
                results.append(n)

            for n in range(3):
                tg.start_soon(work, n)
        return {"cancelled": scope.cancelled_caught, "results": sorted(results)}

    transport, _ = await drive(app, get("/"))
    while not transport.data:
        await transport.changed()
    parsed = _ResponseReader(False).parse(bytes(transport.data), False)
    assert parsed is not None
    assert parsed[0].json() == {"cancelled": True, "results": [0, 1, 2]}
    transport.close()
