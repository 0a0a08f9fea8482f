"""A Starlette app with BaseHTTPMiddleware on veter: the middleware's task groups,
lifespan state, JSON, forms and streaming, over keep-alive and in parallel."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.e2e.processes import Proc

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

APP = "tests.hosted.apps.starlette_app:app"


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    proc = Proc(["run", APP, "--single-process", "--port", "0", "--access-log", "off"])
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as c:
        yield c


def test_through_middleware(client: httpx.Client) -> None:
    r = client.get("/")
    assert r.text == "home"
    assert r.headers["x-through-middleware"] == "yes"


def test_lifespan_state_is_shared(client: httpx.Client) -> None:
    first = client.get("/count").json()["count"]
    assert client.get("/count").json()["count"] == first + 1


def test_json_form_and_stream(client: httpx.Client) -> None:
    assert client.post("/json", json={"a": [1, 2]}).json() == {"a": [1, 2]}
    assert client.post("/form", data={"x": "1", "y": "two"}).json() == {"x": "1", "y": "two"}
    r = client.get("/stream")
    assert r.text == "0,1,2,3,"
    assert r.headers["x-through-middleware"] == "yes"


def test_many_in_parallel(server: Proc) -> None:
    async def run() -> set[int]:
        # 300 requests through httpx's pool of 100 connections: its default 5 s pool
        # timeout failed once on a loaded 2-core machine (no timing is tested here).
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as c:
            responses = await asyncio.gather(*(c.get("/") for _ in range(300)))
        return {r.status_code for r in responses}

    assert asyncio.run(run()) == {200}


def test_file_response_is_sent_with_pathsend(client: httpx.Client) -> None:
    # FileResponse hands the file to the server (http.response.pathsend), even
    # through BaseHTTPMiddleware.
    r = client.get("/file")
    assert r.status_code == 200
    assert r.content == bytes(range(256)) * (12 * 1024)
    assert r.headers["content-length"] == str(3 << 20)
    assert r.headers["x-through-middleware"] == "yes"
    assert client.head("/file").content == b""
