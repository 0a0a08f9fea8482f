"""A hosted ASGI app's WebSockets (the ``websocket`` scope on veter's WebSocket
protocol), driven by the ``websockets`` library and raw sockets."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.e2e.processes import Proc, wait_until

APP = "tests.hosted.apps.ws_raw:app"


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    proc = Proc(["run", APP, "--single-process", "--port", "0", "--root-path", "/api"])
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


def url(server: Proc, path: str) -> str:
    return f"ws://127.0.0.1:{server.port}{path}"


def events(server: Proc) -> list[Any]:
    result: list[Any] = httpx.get(f"http://127.0.0.1:{server.port}/events").json()
    return result


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_scope(server: Proc) -> None:
    async def go() -> dict[str, Any]:
        async with websockets.connect(
            url(server, "/scope?x=1"),
            subprotocols=["one", "two"],
            additional_headers={"X-Request-ID": "ws-1"},
        ) as ws:
            assert ws.subprotocol is None  # offered, none chosen: allowed
            return dict(json.loads(await ws.recv()))

    scope = run(go())
    assert scope["type"] == "websocket"
    assert scope["asgi"] == {"version": "3.0", "spec_version": "2.4"}
    assert (scope["http_version"], scope["scheme"]) == ("1.1", "ws")
    assert (scope["path"], scope["raw_path"], scope["root_path"]) == ("/api/scope", "/api/scope", "/api")
    assert scope["query_string"] == "x=1"
    assert scope["subprotocols"] == ["one", "two"]
    assert scope["has_method"] is False
    assert scope["extensions"] == ["websocket.http.response"]
    assert scope["request_id"] == "ws-1"
    assert "sec-websocket-key" in scope["header_names"]


def test_echo_subprotocol_headers_and_disconnect(server: Proc) -> None:
    async def go() -> tuple[str | None, str | None, list[Any]]:
        async with websockets.connect(url(server, "/echo"), subprotocols=["chat", "other"]) as ws:
            await ws.send("hi")
            text = await ws.recv()
            await ws.send(b"\x01\x02\x03")
            data = await ws.recv()
            accepted = ws.response.headers.get("x-accepted")
            subprotocol = ws.subprotocol
            await ws.close(4321, "client done")
        return subprotocol, accepted, [text, data]

    assert run(go()) == ("chat", "yes", ["echo hi", b"\x03\x02\x01"])
    wait_until(lambda: ["disconnect", 4321, "client done"] in events(server), 10)
    wait_until(lambda: ["send after close", "WebSocketClosed"] in events(server), 10)


def test_server_close_with_code_and_reason(server: Proc) -> None:
    async def go() -> tuple[int, str]:
        async with websockets.connect(url(server, "/server-close")) as ws:
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            assert info.value.rcvd is not None
            return info.value.rcvd.code, info.value.rcvd.reason

    assert run(go()) == (4001, "bye now")


@pytest.mark.parametrize(("path", "status"), [("/refuse", 403), ("/nothing", 403), ("/fail-before", 500)])
def test_refused_handshakes(server: Proc, path: str, status: int) -> None:
    with pytest.raises(InvalidStatus) as info:
        run(websockets.connect(url(server, path)).__aenter__())
    assert info.value.response.status_code == status


def test_denial_response(server: Proc) -> None:
    with pytest.raises(InvalidStatus) as info:
        run(websockets.connect(url(server, "/deny")).__aenter__())
    response = info.value.response
    assert response.status_code == 401
    assert response.body == b"no entry"
    assert response.headers["content-type"] == "text/plain"


def test_failure_after_accept_closes_1011(server: Proc) -> None:
    mark = server.mark()

    async def go() -> int:
        async with websockets.connect(url(server, "/fail-after")) as ws:
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            assert info.value.rcvd is not None
            return info.value.rcvd.code

    assert run(go()) == 1011
    server.wait_for("failed after accepting", start=mark)


def test_wrong_message_type_raises_in_the_app(server: Proc) -> None:
    async def go() -> None:
        async with websockets.connect(url(server, "/bad-message")) as ws:
            with pytest.raises(ConnectionClosed):
                await ws.recv()

    run(go())
    wait_until(
        lambda: any(e[0] == "bad message" and "'http.response.start'" in e[1] for e in events(server)), 10
    )


def test_plain_get_to_a_websocket_path_is_http(server: Proc) -> None:
    # No Upgrade: the app is called with an http scope.
    assert httpx.get(f"http://127.0.0.1:{server.port}/echo").status_code == 200


def test_other_upgrades_are_plain_http(server: Proc) -> None:
    with socket.create_connection(("127.0.0.1", server.port or 0), timeout=5) as sock:
        sock.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
