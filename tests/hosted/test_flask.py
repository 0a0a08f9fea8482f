"""A Flask service moved onto veter with one command (``veter run module:app``),
served plain and inside ``wsgiref.validate.validator`` (PEP 3333's checker), and
driven by independent clients (httpx, aiohttp)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from tests.e2e.processes import Proc, wait_until
from tests.hosted import checks

httpx = pytest.importorskip("httpx")
aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("flask")


@pytest.fixture(scope="module", params=["app", "validated"])
def server(request: pytest.FixtureRequest) -> Iterator[Proc]:
    proc = Proc(
        [
            "run",
            f"tests.hosted.apps.flask_app:{request.param}",
            "--port",
            "0",
            "--workers",
            "1",
            "--threads",
            "8",
            "--access-log",
            "off",
            "--max-body-bytes",
            str(300 << 20),
            # "validated" is wsgiref's validator around the app, a `def (*args)`:
            # found to be WSGI by --interface auto.
        ]
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()
    # The validator raises (and the worker logs) on any breach of PEP 3333.
    assert "AssertionError" not in proc.output()
    assert "WSGIWarning" not in proc.output()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as c:
        yield c


@pytest.mark.parametrize(("version", "connection"), [("1.0", ""), ("1.1", "Connection: close\r\n")])
def test_json_body_on_the_connections_last_request(server: Proc, version: str, connection: str) -> None:
    # Issue 37: a 500, ClientDisconnected from wsgi.input.read().
    body = b'{"name":"x"}'
    answer = checks.post_json_as_the_last_request(server.port, "/items", body, version, connection)
    assert answer.startswith(b"HTTP/1.1 201 Created\r\n"), answer
    assert answer.rstrip().endswith(b'{"name":"x"}'), answer


def test_routes_and_json(client: httpx.Client) -> None:
    assert client.get("/").json() == {"hello": "world"}
    r = client.get("/plaintext")
    assert (r.text, r.headers["content-type"]) == ("Hello, World!", "text/plain; charset=utf-8")
    assert r.headers["content-length"] == "13"
    assert client.get("/items/42", params={"q": "x"}).json() == {"item_id": 42, "q": "x"}
    assert client.get("/missing").status_code == 404
    assert client.get("/abort").status_code == 418
    assert client.head("/plaintext").content == b""


def test_json_body(client: httpx.Client) -> None:
    r = client.post("/items", json={"name": "pen", "price": 1.5})
    assert (r.status_code, r.json()) == (201, {"name": "pen", "price": 1.5})
    assert client.post("/items", json={"price": 1}).status_code == 400


def test_environ(client: httpx.Client) -> None:
    r = client.get("/environ", params={"a": "1 2"}, headers={"X-Request-ID": "abc-123"})
    assert r.json() == {
        "request_id": "abc-123",
        "script_name": "",
        "path_info": "/environ",
        "query": "a=1+2",
        "protocol": "HTTP/1.1",
        "scheme": "http",
        "multithread": True,
        "remote": "127.0.0.1",
        "thread": r.json()["thread"],
    }
    assert r.json()["thread"].startswith("veter-wsgi")  # never the loop's thread
    assert r.headers["x-request-id"] == "abc-123"


def test_form_and_multipart_upload(client: httpx.Client) -> None:
    checks.form_and_upload(client)


def test_chunked_upload(client: httpx.Client) -> None:
    def body() -> Iterator[bytes]:
        for _ in range(10):
            yield b"x" * 100_000

    assert client.post("/consume", content=body()).json() == {"total": 1_000_000}


def test_streaming_and_sse(client: httpx.Client) -> None:
    r = client.get("/stream")
    assert r.text == "".join(f"piece {i}\n" for i in range(5))
    assert r.headers.get("transfer-encoding") == "chunked"
    with client.stream("GET", "/sse") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data:")]
    assert lines == ["data: 0", "data: 1", "data: 2"]


def test_file_wrapper(client: httpx.Client) -> None:
    r = client.get("/file")
    assert r.content == bytes(range(256)) * 4096
    assert r.headers["content-length"] == str(1 << 20)


def test_client_leaving_mid_stream_closes_the_iterable(server: Proc, client: httpx.Client) -> None:
    before = client.get("/seen").json()["closed_streams"]
    with (
        httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as other,
        other.stream("GET", "/forever") as r,
    ):
        for _ in r.iter_lines():
            break
    wait_until(lambda: client.get("/seen").json()["closed_streams"] == before + 1, 10)


def test_view_error_is_flasks_500_logged_with_the_request_id(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    r = client.get("/fail")
    assert r.status_code == 500
    # Flask logs through logging, in the request's context (the id goes into the thread).
    rid = r.headers["x-request-id"]
    server.wait_for(rf"\[{rid}\] Exception on /fail \[GET\]", start=mark)
    assert client.get("/").status_code == 200


def test_blocking_views_run_in_the_pool_side_by_side(server: Proc) -> None:
    async def run() -> float:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{server.port}") as session:

            async def one() -> str:
                async with session.get("/sleep", params={"s": "0.3"}) as r:
                    return await r.text()

            start = time.monotonic()
            assert await asyncio.gather(*(one() for _ in range(8))) == ["slept"] * 8
            return time.monotonic() - start

    # Eight 0.3 s sleeps on eight threads: about 0.3 s, not 2.4 s.
    assert asyncio.run(run()) < 1.5


def test_aiohttp_client_concurrent(server: Proc) -> None:
    async def run() -> list[int]:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{server.port}") as session:

            async def one(i: int) -> int:
                async with session.get(f"/items/{i}") as r:
                    return int((await r.json())["item_id"])

            return await asyncio.gather(*(one(i) for i in range(200)))

    assert asyncio.run(run()) == list(range(200))


def test_large_upload_is_streamed(server: Proc, client: httpx.Client) -> None:
    checks.large_upload_is_streamed(server, client, declared=True)
