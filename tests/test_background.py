"""BackgroundTasks: calls made after the answer, in order, async awaited and sync
in the thread pool, with the request as the current one; failures logged and the
next call still made; nothing scheduled when the handler raises."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

import veter
from veter.context import current_request_id
from veter.params import Depends
from veter.testing import TestClient


def make_app(seen: list[object]) -> veter.App:
    app = veter.App()

    def audit(tasks: veter.BackgroundTasks) -> str:
        tasks.add_task(seen.append, "dependency")
        return "audited"

    @app.post("/order")
    async def order(tasks: veter.BackgroundTasks, audited: str = Depends(audit)) -> dict[str, str]:
        async def notify(what: str) -> None:
            await asyncio.sleep(0)
            seen.append((what, current_request_id()))

        def write(what: str) -> None:
            seen.append(
                (what, threading.current_thread() is not threading.main_thread(), current_request_id())
            )

        tasks.add_task(notify, "async")
        tasks.add_task(write, what="sync")
        return {"audited": audited}

    @app.get("/plain")
    def plain(request: veter.Request, tasks: veter.BackgroundTasks) -> str:
        tasks.add_task(seen.append, "plain")
        return "ok"

    @app.get("/fails")
    def fails(tasks: veter.BackgroundTasks) -> str:
        def broken() -> None:
            raise RuntimeError("the task broke")

        tasks.add_task(broken)
        tasks.add_task(seen.append, "after the broken one")
        return "ok"

    @app.get("/raises")
    def raises(tasks: veter.BackgroundTasks) -> str:
        tasks.add_task(seen.append, "never")
        raise veter.HTTPException(409, "no")

    return app


def test_calls_run_in_order_with_the_request_current() -> None:
    seen: list[object] = []
    with TestClient(make_app(seen)) as client:
        r = client.post("/order", headers={"x-request-id": "req-42"})
        assert r.json() == {"audited": "audited"}
        assert seen == ["dependency", ("async", "req-42"), ("sync", True, "req-42")]
        seen.clear()
        assert client.get("/plain").text == "ok"
        assert seen == ["plain"]


def test_a_failure_is_logged_and_the_next_call_made(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[object] = []
    with TestClient(make_app(seen)) as client, caplog.at_level(logging.ERROR, "veter.error"):
        assert client.get("/fails", headers={"x-request-id": "req-7"}).text == "ok"
    assert seen == ["after the broken one"]
    (record,) = [r for r in caplog.records if "background task" in r.getMessage()]
    assert "fails.<locals>.broken failed" in record.getMessage()
    assert record.exc_info is not None and "the task broke" in str(record.exc_info[1])


def test_nothing_runs_when_the_handler_raises() -> None:
    seen: list[object] = []
    with TestClient(make_app(seen)) as client:
        assert client.get("/raises").status == 409
    assert seen == []


def test_add_task_takes_a_callable() -> None:
    tasks = veter.BackgroundTasks()
    with pytest.raises(TypeError, match="callable"):
        tasks.add_task("not callable")  # type: ignore[arg-type]
    tasks.add_task(print, "x")
    assert len(tasks) == 1
    assert "print" in repr(tasks)


def test_a_streamed_answer_is_sent_whole_before_cleanup_and_tasks() -> None:
    # The dependency's resource stays open while the body streams; its cleanup and
    # the background calls come after the last piece.
    events: list[str] = []
    app = veter.App()

    def resource() -> Iterator[dict[str, bool]]:
        handle = {"open": True}
        yield handle
        handle["open"] = False
        events.append("cleanup")

    @app.get("/stream")
    async def stream(
        tasks: veter.BackgroundTasks, handle: dict[str, bool] = Depends(resource)
    ) -> veter.StreamingResponse:
        tasks.add_task(events.append, "task")

        async def body() -> AsyncIterator[str]:
            for i in range(3):
                await asyncio.sleep(0)
                events.append(f"piece {i} open={handle['open']}")
                yield f"{i}"

        return veter.StreamingResponse(body(), content_type="text/plain")

    with TestClient(app) as client:
        assert client.get("/stream").text == "012"
    assert events == ["piece 0 open=True", "piece 1 open=True", "piece 2 open=True", "cleanup", "task"]
