"""Request ids: taken or generated, echoed, and in the context while the request runs."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import Any

import pytest

import veter
from veter.context import current_request, current_request_id
from veter.logs import RequestIdFilter
from veter.testing import TestClient

GENERATED = re.compile(r"^[0-9a-f]{32}$")


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.addFilter(RequestIdFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Any:
    handler = Collect()
    logger = logging.getLogger("test.request_id")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.records
    logger.removeHandler(handler)


def ids_app() -> veter.App:
    app = veter.App()
    log = logging.getLogger("test.request_id")

    @app.get("/id")
    def plain(request: veter.Request) -> Any:
        return {"id": request.id, "context": current_request_id()}

    @app.get("/tasks")
    async def tasks(request: veter.Request) -> Any:
        log.info("in handler")

        async def child() -> str | None:
            await asyncio.sleep(0)
            log.info("in child task")
            return current_request_id()

        seen_in_child = await asyncio.create_task(child())
        return {"id": request.id, "child": seen_in_child}

    @app.get("/thread", blocking=True)
    def in_thread(request: veter.Request) -> Any:
        return {"id": request.id, "context": current_request_id(), "main": threading.current_thread().name}

    @app.get("/own")
    def own(request: veter.Request) -> veter.Response:
        return veter.Response("x", headers={"X-Request-ID": "set-by-handler"})

    return app


def test_generated_ids_are_unique_and_echoed() -> None:
    with TestClient(ids_app()) as client:
        answers = [client.get("/id") for _ in range(3)]
    ids = [a.headers["x-request-id"] for a in answers]
    assert all(GENERATED.match(i) for i in ids) and len(set(ids)) == 3
    for answer, rid in zip(answers, ids, strict=True):
        assert answer.json() == {"id": rid, "context": rid}


@pytest.mark.parametrize("incoming", ["abc-123", "a.b:c_d+e=f/g@h", "x" * 128])
def test_well_formed_incoming_ids_are_kept(incoming: str) -> None:
    with TestClient(ids_app()) as client:
        answer = client.get("/id", headers={"X-Request-ID": incoming})
    assert answer.headers["x-request-id"] == incoming and answer.json()["id"] == incoming


@pytest.mark.parametrize("incoming", ["", "has space", 'quote"d', "<script>", "x" * 129, "caf\u00e9"])
def test_bad_incoming_ids_are_replaced(incoming: str) -> None:
    with TestClient(ids_app()) as client:
        answer = client.get("/id", headers={"X-Request-ID": incoming})
    assert GENERATED.match(answer.headers["x-request-id"])


def test_context_reaches_tasks_threads_and_log_records(records: list[logging.LogRecord]) -> None:
    with TestClient(ids_app()) as client:
        tasks = client.get("/tasks", headers={"X-Request-ID": "req-1"})
        thread = client.get("/thread", headers={"X-Request-ID": "req-2"})
    assert tasks.json() == {"id": "req-1", "child": "req-1"}
    body = thread.json()
    assert body["id"] == body["context"] == "req-2" and body["main"] != threading.current_thread().name
    assert [(r.getMessage(), r.request_id) for r in records] == [  # type: ignore[attr-defined]
        ("in handler", "req-1"),
        ("in child task", "req-1"),
    ]
    assert current_request() is None, "the request does not leak out of its handler"


def test_core_answers_carry_ids_too() -> None:
    with TestClient(ids_app()) as client:
        missing = client.get("/nope", headers={"X-Request-ID": "r404"})
        wrong = client.post("/id", headers={"X-Request-ID": "r405"})
    assert missing.status == 404 and missing.headers["x-request-id"] == "r404"
    assert wrong.status == 405 and wrong.headers["x-request-id"] == "r405"


def test_a_handler_may_set_its_own() -> None:
    with TestClient(ids_app()) as client:
        answer = client.get("/own", headers={"X-Request-ID": "incoming"})
    assert answer.headers.getall("x-request-id") == ["set-by-handler"]


def test_header_name_is_configurable_and_ids_can_be_off() -> None:
    app = ids_app()
    with TestClient(app, config=app.config.with_(request_id_header="X-Trace-Id")) as client:
        answer = client.get("/id", headers={"X-Trace-Id": "t-1", "X-Request-ID": "ignored"})
    assert answer.headers["x-trace-id"] == "t-1" and "x-request-id" not in answer.headers
    app = ids_app()
    with TestClient(app, config=app.config.with_(request_id_header="off")) as client:
        answer = client.get("/id", headers={"X-Request-ID": "ignored"})
    assert answer.json() == {"id": None, "context": None}
    assert "x-request-id" not in answer.headers


def test_bad_header_name_is_refused() -> None:
    app = ids_app()
    with pytest.raises(ValueError, match="invalid header name"):
        app.build_dispatcher(app.config.with_(request_id_header="Bad Name"))


def test_a_plain_def_handler_sees_its_request_inline_and_in_log_records(
    records: list[logging.LogRecord],
) -> None:
    app = veter.App()
    log = logging.getLogger("test.request_id")

    @app.get("/plain")
    def plain(request: veter.Request) -> Any:
        log.info("plain handler")
        return {"id": current_request_id(), "same": current_request() is request}

    @app.get("/awaitable")
    def returns_awaitable(request: veter.Request) -> Any:
        async def later() -> Any:
            await asyncio.sleep(0)
            return {"later": current_request_id()}

        return later()  # a def handler returning a coroutine runs it as a task

    with TestClient(app) as client:
        plain_answers = [client.get("/plain", headers={"X-Request-ID": f"p-{i}"}).json() for i in range(2)]
        later_answer = client.get("/awaitable", headers={"X-Request-ID": "later-1"}).json()
    assert plain_answers == [{"id": "p-0", "same": True}, {"id": "p-1", "same": True}]
    assert later_answer == {"later": "later-1"}
    assert [(r.getMessage(), r.request_id) for r in records] == [  # type: ignore[attr-defined]
        ("plain handler", "p-0"),
        ("plain handler", "p-1"),
    ]
    assert current_request() is None, "the slot is empty once the handler returned"


def test_the_inline_slot_is_emptied_when_a_plain_def_handler_raises() -> None:
    app = veter.App()
    seen: list[bool] = []

    @app.get("/boom")
    def boom(request: veter.Request) -> Any:
        seen.append(current_request() is request)
        raise RuntimeError("boom")

    @app.get("/plain")
    def plain(request: veter.Request) -> Any:
        return {"same": current_request() is request}

    with TestClient(app) as client:
        assert client.get("/boom").status_code == 500
        assert current_request() is None, "a handler's error leaves the slot as it was"
        assert client.get("/plain").json() == {"same": True}
    assert seen == [True]
    assert current_request() is None
