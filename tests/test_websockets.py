"""The Python side of WebSockets without a socket: route declaration, settings,
and which handshakes are refused with what (tests/e2e/test_websockets.py covers
the protocol over real connections)."""

from __future__ import annotations

import asyncio

import pytest

import veter
from veter.config import ServerConfig
from veter.testing import TestClient, WebSocketRejected
from veter.testing_websocket import BINARY, CLOSE, TEXT, client_frame
from veter.websockets import WebSocketDisconnect, WebSocketSettings

KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def make_app() -> veter.App:
    app = veter.App()

    @app.websocket("/ws")
    async def ws(ws: veter.WebSocket) -> None:
        await ws.accept()

    return app


def handshake(**overrides: str | None) -> dict[str, str]:
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": KEY,
        "Sec-WebSocket-Version": "13",
    }
    for name, value in overrides.items():
        name = name.replace("_", "-")
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return headers


def test_route_declaration_checks() -> None:
    app = veter.App()
    with pytest.raises(TypeError, match="async def"):

        @app.websocket("/ws")
        def sync(ws: veter.WebSocket) -> None: ...

    with pytest.raises(ValueError, match="must start with '/'"):

        @app.websocket("ws")
        async def nopath(ws: veter.WebSocket) -> None: ...

    with pytest.raises(ValueError, match="max_message_size"):
        app.websocket("/ws", max_message_size=-1)


def test_settings_default_to_the_server_settings() -> None:
    config = ServerConfig(ws_max_message_size=5, ws_ping_interval=0)
    resolved = WebSocketSettings(max_queue=7).resolved(config)
    assert resolved == WebSocketSettings(
        5, 7, 0.0, config.ws_ping_timeout, config.ws_close_timeout, True, 12, 1, 128
    )
    off = WebSocketSettings(deflate=False, deflate_level=9).resolved(ServerConfig(ws_deflate_min_size=0))
    assert (off.deflate, off.deflate_window_bits, off.deflate_level, off.deflate_min_size) == (
        False,
        12,
        9,
        0,
    )


def test_server_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="ws_max_message_size"):
        ServerConfig(ws_max_message_size=0)
    with pytest.raises(ValueError, match="ws_ping_interval"):
        ServerConfig(ws_ping_interval=-1)
    with pytest.raises(ValueError, match="ws_close_timeout"):
        ServerConfig(ws_close_timeout=0)
    with pytest.raises(ValueError, match="ws_deflate_window_bits must be 9 to 15, got 8"):
        ServerConfig(ws_deflate_window_bits=8)
    with pytest.raises(ValueError, match="ws_deflate_level"):
        ServerConfig(ws_deflate_level=0)
    with pytest.raises(ValueError, match="ws_deflate_min_size"):
        ServerConfig(ws_deflate_min_size=-1)


def test_route_deflate_settings_are_validated() -> None:
    app = veter.App()
    with pytest.raises(ValueError, match="/ws: deflate_window_bits must be 9 to 15, got 16"):
        app.websocket("/ws", deflate_window_bits=16)
    with pytest.raises(ValueError, match="/ws: deflate_level must be 1 to 9, got 10"):
        app.websocket("/ws", deflate_level=10)
    with pytest.raises(ValueError, match="/ws: deflate_min_size must be >= 0"):
        app.websocket("/ws", deflate_min_size=-5)


@pytest.mark.parametrize(
    ("overrides", "status"),
    [
        ({"Upgrade": None, "Connection": None}, 426),
        ({"Upgrade": "h2c"}, 426),
        ({"Sec-WebSocket-Version": "8"}, 426),
        ({"Sec-WebSocket-Version": None}, 426),
        ({"Sec-WebSocket-Key": None}, 400),
        ({"Sec-WebSocket-Key": "c2hvcnQ="}, 400),
        ({"Sec-WebSocket-Key": "not base64!!!!!!!!!!!!=="}, 400),
    ],
)
def test_refused_handshakes(overrides: dict[str, str | None], status: int) -> None:
    with TestClient(make_app()) as client:
        response = client.get("/ws", headers=handshake(**overrides))
        assert response.status_code == status
        if status == 426:
            assert response.headers["sec-websocket-version"] == "13"


def test_disconnect_carries_code_and_reason() -> None:
    exc = WebSocketDisconnect(4001, "gone")
    assert (exc.code, exc.reason) == (4001, "gone")
    assert str(exc) == "WebSocket closed (4001: gone)"
    assert str(WebSocketDisconnect()) == "WebSocket closed (1000)"


def test_close_codes_an_endpoint_may_not_send_are_refused() -> None:
    protocol = veter._core.WebSocketProtocol(WebSocketDisconnect, max_message=10, max_queue=10)
    for code in (999, 1004, 1006, 1015, 2000, 5000):
        with pytest.raises(ValueError, match="not a close code"):
            protocol.close(code, "")


class FakeTransport(asyncio.Transport):
    """What the protocol calls on its transport, recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_async_for_steps_take_waiting_messages_park_and_end() -> None:
    """`async for message in ws` runs on the core's `anext`: a waiting message is
    answered at once, else a future is parked; the peer's close ends the loop."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        protocol = veter._core.WebSocketProtocol(WebSocketDisconnect, max_message=1024, max_queue=1024)
        protocol._attach(FakeTransport(), client_frame(TEXT, b"one") + client_frame(BINARY, b"two"))
        # Both messages wait: each step is already done.
        assert await protocol.anext(loop.create_future) == "one"
        assert await protocol.anext(loop.create_future) == b"two"
        # None waits: the step parks a future, which the next message completes.
        step = protocol.anext(loop.create_future)
        assert isinstance(step, asyncio.Future) and not step.done()
        with pytest.raises(TypeError, match="already waiting"):
            protocol.anext(loop.create_future)
        protocol.data_received(client_frame(TEXT, "drei ü".encode()))
        assert await step == "drei ü"
        # The peer's close ends a parked step, and every step after it.
        step = protocol.anext(loop.create_future)
        protocol.data_received(client_frame(CLOSE, b"\x03\xe8"))
        with pytest.raises(StopAsyncIteration):
            await step
        with pytest.raises(StopAsyncIteration):
            protocol.anext(loop.create_future)
        # receive() still raises the disconnect, with the peer's code.
        with pytest.raises(WebSocketDisconnect) as info:
            protocol.receive(loop.create_future())
        assert info.value.code == 1000

    asyncio.run(scenario())


def test_iterating_before_accept_is_refused() -> None:
    app = veter.App()
    seen: list[str] = []

    @app.websocket("/early")
    async def early(ws: veter.WebSocket) -> None:
        try:
            async for _ in ws:
                pass
        except RuntimeError as exc:
            seen.append(str(exc))
        await ws.close()

    with TestClient(app) as client, pytest.raises(WebSocketRejected), client.websocket_connect("/early"):
        pass
    assert seen == ["accept() the WebSocket before receiving or sending"]
