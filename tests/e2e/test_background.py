"""Background tasks on a real server: they start after the answer has reached the
client, and a stopping server waits for them (cancelling them at its deadline)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

import veter
from veter.params import Depends

from .conftest import RunningServer, read_responses

Serve = Callable[..., RunningServer]


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_calls_start_after_the_answer_was_sent(serve: Serve, kind: str) -> None:
    arrived = threading.Event()
    outcome: list[str] = []
    app = veter.App()

    async def check() -> None:
        # Blocks the loop on purpose: had the call started before the answer was
        # written, the answer could not leave until this wait timed out.
        outcome.append("arrived first" if arrived.wait(5) else "the call ran before the answer was sent")

    if kind == "def":

        @app.post("/work")
        def work(tasks: veter.BackgroundTasks) -> str:
            tasks.add_task(check)
            return "accepted"

    else:

        @app.post("/work")
        async def work_async(tasks: veter.BackgroundTasks) -> str:
            await asyncio.sleep(0)
            tasks.add_task(check)
            return "accepted"

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        (answer,), _ = read_responses(sock, 1)
        arrived.set()
    assert answer.text == "accepted"
    server.stop()
    assert outcome == ["arrived first"]


def test_a_stopping_server_waits_for_running_calls(serve: Serve) -> None:
    started = threading.Event()
    done: list[str] = []
    app = veter.App()

    @app.post("/later")
    async def later(tasks: veter.BackgroundTasks) -> str:
        async def finish() -> None:
            started.set()
            await asyncio.sleep(0.3)
            done.append("finished")

        tasks.add_task(finish)
        return "ok"

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"POST /later HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        read_responses(sock, 1)
    assert started.wait(10)
    server.stop()
    assert done == ["finished"]


def test_calls_left_at_the_graceful_deadline_are_cancelled(serve: Serve) -> None:
    started = threading.Event()
    cancelled: list[str] = []
    app = veter.App()

    @app.post("/stuck")
    async def stuck(tasks: veter.BackgroundTasks) -> str:
        async def forever() -> None:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append("cancelled")
                raise

        tasks.add_task(forever)
        return "ok"

    server = serve(app, graceful_timeout=0.2)
    with server.connect() as sock:
        sock.sendall(b"POST /stuck HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        read_responses(sock, 1)
    assert started.wait(10)
    server.stop()
    assert cancelled == ["cancelled"]


def test_dependency_cleanup_runs_after_the_answer_was_sent(serve: Serve) -> None:
    arrived = threading.Event()
    outcome: list[str] = []
    app = veter.App()

    def connection() -> Iterator[str]:
        yield "conn"
        # Blocks the loop on purpose, as above: run before the answer was written,
        # it would hold the answer back until the wait timed out.
        outcome.append("after the answer" if arrived.wait(5) else "cleanup ran before the answer was sent")

    @app.get("/use")
    async def use(conn: str = Depends(connection)) -> str:
        await asyncio.sleep(0)
        return conn

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"GET /use HTTP/1.1\r\nHost: t\r\n\r\n")
        (answer,), _ = read_responses(sock, 1)
        arrived.set()
    assert answer.text == "conn"
    server.stop()
    assert outcome == ["after the answer"]
