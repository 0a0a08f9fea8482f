"""Litestar and Quart services moved onto veter with one command, driven by httpx
and the ``websockets`` client: the same requests to both, each framework's answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.e2e.processes import Proc, wait_until
from tests.hosted import checks

httpx = pytest.importorskip("httpx")
websockets = pytest.importorskip("websockets")


@pytest.fixture(scope="module", params=["litestar", "quart"])
def server(request: pytest.FixtureRequest) -> Iterator[Proc]:
    pytest.importorskip(request.param)
    proc = Proc(["run", f"tests.hosted.apps.{request.param}_app:app", "--port", "0", "--workers", "1"])
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as c:
        yield c


def framework(server: Proc) -> str:
    return "litestar" if "litestar_app" in server.proc.args[4] else "quart"


def test_routes_and_json(server: Proc, client: httpx.Client) -> None:
    root = client.get("/").json()
    assert root["hello"] == "world"
    if framework(server) == "quart":
        assert root["started"] is True  # before_serving ran (the lifespan protocol)
    assert client.get("/items/42", params={"q": "x"}).json() == {"item_id": 42, "q": "x"}
    r = client.post("/items", json={"name": "pen", "price": 1.5})
    assert (r.status_code, r.json()) == (201, {"name": "pen", "price": 1.5})
    assert client.get("/missing").status_code == 404


def test_form_and_multipart_upload(client: httpx.Client) -> None:
    checks.form_and_upload(client)


def test_streaming(client: httpx.Client) -> None:
    r = client.get("/stream")
    assert r.text == "".join(f"piece {i}\n" for i in range(5))


def test_websocket(server: Proc) -> None:
    async def run() -> list[str]:
        async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws") as ws:
            out = []
            for i in range(3):
                await ws.send(json.dumps({"n": i}))
                out.append(str(await ws.recv()))
            return out

    got = asyncio.run(run())
    if framework(server) == "litestar":
        assert [json.loads(m) for m in got] == [{"echo": {"n": i}} for i in range(3)]
    else:
        assert got == [f'echo {{"n": {i}}}' for i in range(3)]


@pytest.mark.parametrize("server", ["litestar"], indirect=True)
def test_litestar_state_sse_and_background(server: Proc, client: httpx.Client) -> None:
    r = client.get("/state", headers={"X-Request-ID": "ls-1"})
    assert r.json() == {"pool": "the-pool", "request_id": "ls-1"}
    with client.stream("GET", "/sse") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data:")]
    assert lines == ["data: 0", "data: 1", "data: 2"]
    before = client.get("/seen").json()["background"]
    assert client.post("/background").text == "queued"
    wait_until(lambda: client.get("/seen").json()["background"] == before + 1, 10)
