"""A FastAPI service moved onto veter with one command (``veter run module:app``),
driven by independent clients (httpx, aiohttp)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from tests.e2e.processes import Proc, wait_until
from tests.hosted import checks

httpx = pytest.importorskip("httpx")
aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("fastapi")
pytest.importorskip("multipart")

APP = "tests.hosted.apps.fastapi_app:app"


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    proc = Proc(
        [
            "run",
            APP,
            "--port",
            "0",
            "--workers",
            "1",
            "--access-log",
            "off",
            "--max-body-bytes",
            str(300 << 20),
        ]
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as c:
        yield c


def test_routes_and_json(client: httpx.Client) -> None:
    assert client.get("/").json() == {"hello": "world"}
    assert client.get("/items/42", params={"q": "x"}).json() == {"item_id": 42, "q": "x"}
    assert client.get("/sync").json() == {"threadpool": True}
    r = client.post("/items", json={"name": "pen", "price": 1.5, "tags": ["a"]})
    assert r.json() == {"name": "pen", "price": 1.5, "tags": ["a"]}


@pytest.mark.parametrize(("version", "connection"), [("1.0", ""), ("1.1", "Connection: close\r\n")])
def test_json_body_on_the_connections_last_request(server: Proc, version: str, connection: str) -> None:
    # Issue 37: `curl -0 -d ... /items` (what a stock nginx sends upstream) got 400
    # "There was an error parsing the body".
    body = b'{"name":"x","price":1.5}'
    answer = checks.post_json_as_the_last_request(server.port, "/items", body, version, connection)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    assert answer.endswith(b'{"name":"x","price":1.5,"tags":[]}'), answer


def test_validation_errors_are_the_apps(client: httpx.Client) -> None:
    r = client.post("/items", json={"name": "pen"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "price"]
    assert client.get("/items/nope").status_code == 422
    assert client.get("/missing").status_code == 404


def test_lifespan_state_and_request_id(client: httpx.Client) -> None:
    r = client.get("/state", headers={"X-Request-ID": "abc-123"})
    assert r.json() == {"pool": "the-pool", "request_id": "abc-123"}
    assert r.headers["x-request-id"] == "abc-123"


def test_form_and_multipart_upload(client: httpx.Client) -> None:
    checks.form_and_upload(client)


def test_streaming_and_sse(client: httpx.Client) -> None:
    r = client.get("/stream")
    assert r.text == "".join(f"piece {i}\n" for i in range(5))
    with client.stream("GET", "/sse") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data:")]
    assert lines == ["data: 0", "data: 1", "data: 2"]


def test_background_task_runs_after_the_answer(client: httpx.Client) -> None:
    before = client.get("/seen").json()["background"]
    start = time.monotonic()
    assert client.post("/background").text == "queued"
    assert time.monotonic() - start < 0.25  # the answer did not wait for the 0.3 s task
    wait_until(lambda: client.get("/seen").json()["background"] == before + 1, 10)


def test_client_leaving_mid_stream_ends_the_generator(server: Proc, client: httpx.Client) -> None:
    before = client.get("/seen").json()["disconnected"]
    with (
        httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as other,
        other.stream("GET", "/forever") as r,
    ):
        for _ in r.iter_lines():
            break
    wait_until(lambda: client.get("/seen").json()["disconnected"] == before + 1, 10)


def test_unhandled_error_is_a_500_and_logged(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    r = client.get("/fail")
    assert r.status_code == 500
    server.wait_for(r"ASGI app failed on GET /fail: the handler failed", start=mark)
    assert client.get("/").status_code == 200


def test_aiohttp_client_concurrent(server: Proc) -> None:
    async def run() -> list[int]:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{server.port}") as session:

            async def one(i: int) -> int:
                async with session.get(f"/items/{i}") as r:
                    return int((await r.json())["item_id"])

            return await asyncio.gather(*(one(i) for i in range(200)))

    assert asyncio.run(run()) == list(range(200))


def test_large_upload_is_streamed(server: Proc, client: httpx.Client) -> None:
    checks.large_upload_is_streamed(server, client, declared=False)


def test_websocket_route(server: Proc, client: httpx.Client) -> None:
    websockets = pytest.importorskip("websockets")

    async def run() -> list[object]:
        async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws/lobby") as ws:
            out = []
            for i in range(3):
                await ws.send(json.dumps({"n": i}))
                out.append(json.loads(await ws.recv()))
            await ws.close(1000)
            return out

    assert asyncio.run(run()) == [{"room": "lobby", "echo": {"n": i}} for i in range(3)]
    wait_until(lambda: client.get("/seen").json()["ws_closed"] == 1000, 10)


def test_chunked_body_over_the_limit_is_the_servers_413() -> None:
    # Starlette would turn an exception from receive() into its own 500: the server
    # answers 413 itself and the app sees the client go (http.disconnect). The 413
    # says Connection: close, so httpx opens a new connection for the next request
    # (it used to reuse the closing one when the server's FIN had not arrived yet).
    proc = Proc(["run", APP, "--single-process", "--port", "0", "--max-body-bytes", "1000"])
    try:
        proc.wait_ready()

        def body() -> Iterator[bytes]:
            for _ in range(10):
                yield b"x" * 500

        with httpx.Client(base_url=f"http://127.0.0.1:{proc.port}", timeout=10) as c:
            assert c.post("/consume", content=body()).status_code == 413
            assert c.post("/consume", content=b"y" * 900).json() == {"total": 900}
    finally:
        proc.close()


def test_metrics_by_path_template() -> None:
    # The worker's figures at veter's metrics path (the app never sees it): by the
    # template FastAPI's router matched, else by method.
    proc = Proc(["run", APP, "--workers", "1", "--port", "0", "--metrics-path", "/metrics"])
    try:
        proc.wait_ready()
        with httpx.Client(base_url=f"http://127.0.0.1:{proc.port}", timeout=10) as c:
            for i in range(3):
                assert c.get(f"/items/{i}").status_code == 200
            assert c.post("/items", json={"name": "x"}).status_code == 422
            assert c.get("/missing").status_code == 404
            text = c.get("/metrics").text
    finally:
        proc.close()
    assert 'veter_requests_total{route="/items/{item_id}",status="200"} 3' in text, text
    assert 'route="/items",status="422"' in text, text
    assert 'route="GET",status="404"' in text, text
    assert 'veter_request_duration_seconds_count{route="/items/{item_id}"' in text, text


def test_lag_monitor_names_the_request_and_its_template(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    assert client.get("/block/1").json() == {"blocked": 1}
    server.wait_for(
        r"event loop blocked for more than \d+ ms by route GET /block/1 \(/block/\{n\}\);", start=mark
    )
