"""The test client's WebSockets: the handshake and frames go through veter's own
protocol in memory, so what a served connection would do happens here too."""

from __future__ import annotations

import asyncio

import pytest

import veter
from veter.testing import AsyncTestClient, TestClient, WebSocketRejected
from veter.testing_websocket import BINARY, CONTINUATION, TEXT
from veter.websockets import WebSocketDisconnect


class Seen:
    def __init__(self) -> None:
        self.events: list[object] = []


def make_app(seen: Seen) -> veter.App:
    app = veter.App()

    @app.websocket("/echo/{room}", max_message_size=1024)
    async def echo(ws: veter.WebSocket, room: str) -> None:
        await ws.accept(subprotocol=ws.subprotocols[0] if ws.subprotocols else None)
        try:
            async for message in ws:
                await ws.send(message if message != "room" else room)
        except WebSocketDisconnect as exc:
            seen.events.append(("disconnect", exc.code))
            raise
        seen.events.append(("ended", ws.close_code))

    @app.websocket("/json")
    async def json_echo(ws: veter.WebSocket) -> None:
        await ws.accept()
        await ws.send_json({"got": await ws.receive_json()})
        await ws.close(4000, "done")

    @app.websocket("/refuse")
    async def refuse(ws: veter.WebSocket) -> None:
        await ws.close()

    @app.websocket("/lingers")
    async def lingers(ws: veter.WebSocket) -> None:
        await ws.accept()
        try:
            await ws.receive()
        except WebSocketDisconnect as exc:
            seen.events.append(("lingers", exc.code))

    @app.get("/plain")
    def plain(request: veter.Request) -> str:
        return "plain"

    return app


def test_echo_text_binary_and_path_params() -> None:
    seen = Seen()
    with (
        TestClient(make_app(seen)) as client,
        client.websocket_connect("/echo/lobby", subprotocols=["chat"]) as ws,
    ):
        assert ws.response.status_code == 101
        assert ws.subprotocol == "chat"
        ws.send_text("hello")
        assert ws.receive_text() == "hello"
        ws.send_bytes(b"\x00\xff")
        assert ws.receive_bytes() == b"\x00\xff"
        ws.send("room")
        assert ws.receive() == "lobby"
        ws.close()
        assert ws.close_code == 1000
    assert seen.events == [("ended", 1000)]


def test_json_and_a_close_from_the_server() -> None:
    with TestClient(make_app(Seen())) as client, client.websocket_connect("/json") as ws:
        ws.send_json({"n": 1})
        assert ws.receive_json() == {"got": {"n": 1}}
        with pytest.raises(WebSocketDisconnect) as info:
            ws.receive()
        assert (info.value.code, info.value.reason) == (4000, "done")
        assert ws.close_code == 4000


def test_fragments_are_joined_and_pings_answered() -> None:
    with TestClient(make_app(Seen())) as client, client.websocket_connect("/echo/a") as ws:
        ws.send_frame(TEXT, b"hel", fin=False)
        ws.ping(b"p")
        ws.send_frame(CONTINUATION, b"lo", fin=True)
        assert ws.receive_text() == "hello"
        assert ws.ws.pongs == 1


def test_protocol_errors_are_the_servers_own() -> None:
    seen = Seen()
    with TestClient(make_app(seen)) as client:
        with client.websocket_connect("/echo/a") as ws:
            ws.send_bytes(b"x" * 2000)  # over max_message_size
            with pytest.raises(WebSocketDisconnect) as info:
                ws.receive()
            assert info.value.code == 1009
        with client.websocket_connect("/echo/a") as ws:
            ws.send_frame(BINARY, b"\xff")
            assert ws.receive_bytes() == b"\xff"
            ws.send_frame(TEXT, b"\xff\xfe")  # not UTF-8
            with pytest.raises(WebSocketDisconnect) as info:
                ws.receive()
            assert info.value.code == 1007
    # `async for` ends quietly when the connection closes; close_code says why.
    assert seen.events == [("ended", 1009), ("ended", 1007)]


def test_a_refused_or_unknown_handshake_raises_with_the_answer() -> None:
    with TestClient(make_app(Seen())) as client:
        with pytest.raises(WebSocketRejected) as info, client.websocket_connect("/refuse"):
            pass
        assert info.value.response.status_code == 403
        with pytest.raises(WebSocketRejected) as info, client.websocket_connect("/nowhere"):
            pass
        assert info.value.response.status_code == 404
        # An HTTP route answers as if there were no Upgrade header (RFC 9110 7.8).
        with pytest.raises(WebSocketRejected) as info, client.websocket_connect("/plain"):
            pass
        assert info.value.response.status_code == 200
        assert client.get("/plain").text == "plain"  # the client keeps working


def test_a_websocket_left_open_is_dropped_when_the_client_closes() -> None:
    seen = Seen()
    with TestClient(make_app(seen)) as client:
        ws = client.websocket_connect("/lingers").__enter__()
        assert ws.close_code is None
    assert seen.events == [("lingers", 1006)]


def test_the_async_client() -> None:
    async def scenario() -> None:
        async with (
            AsyncTestClient(make_app(Seen())) as client,
            client.websocket_connect("/echo/x") as ws,
        ):
            await ws.send("one")
            await ws.send(b"two")
            assert [await ws.receive(), await ws.receive()] == ["one", b"two"]

    asyncio.run(scenario())


def test_sending_after_the_close_raises() -> None:
    with TestClient(make_app(Seen())) as client, client.websocket_connect("/echo/a") as ws:
        ws.close(1001)
        assert ws.close_code == 1001
        with pytest.raises(WebSocketDisconnect):
            ws.send_text("late")
