from __future__ import annotations

import veter
from veter.testing import AsyncTestClient, TestClient


def app() -> veter.App:
    a = veter.App()

    @a.post("/echo")
    async def echo(request: veter.Request) -> dict[str, object]:
        return {"body": await request.json(), "q": request.query.getall("q")}

    return a


async def test_async_client() -> None:
    async with AsyncTestClient(app()) as client:
        r = await client.post("/echo", json={"a": 1}, params={"q": ["1", "2"]})
    assert r.status_code == 200
    assert r.json() == {"body": {"a": 1}, "q": ["1", "2"]}


def test_sync_client_without_context_manager() -> None:
    client = TestClient(app())
    try:
        assert client.post("/echo", json=[1]).json() == {"body": [1], "q": []}
    finally:
        client.close()


def test_send_raw_chunked() -> None:
    client = TestClient(app())
    r = client.send_raw(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1]\r\n0\r\n\r\n"
    )
    assert r.json() == {"body": [1], "q": []}
