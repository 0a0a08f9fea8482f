"""WebSockets over real sockets: the handshake and its refusals, echo, fragments,
control frames, UTF-8 and size limits, protocol errors, the close handshake from
either side, keep-alive pings, backpressure both ways, and a graceful stop."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable

import pytest

import veter
from veter import WebSocket, WebSocketDisconnect

from .conftest import RunningServer, read_responses
from .wsclient import BINARY, CLOSE, CONT, PING, PONG, TEXT, WsClient, close_frame, frame

Serve = Callable[..., RunningServer]


class Seen:
    def __init__(self) -> None:
        self.codes: list[int] = []
        self.ended = threading.Event()
        self.sent = 0


def make_app(seen: Seen) -> veter.App:
    app = veter.App()

    @app.websocket("/ws")
    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        try:
            async for message in ws:
                await ws.send(message)
        finally:
            seen.codes.append(ws.close_code or 0)
            seen.ended.set()

    @app.websocket("/rooms/{room}")
    async def room(ws: WebSocket, room: str) -> None:
        await ws.accept(subprotocol="chat" if "chat" in ws.subprotocols else None)
        await ws.send_json({"room": room, "id": ws.id, "subprotocol": ws.subprotocol})
        await ws.close(4000, "bye")
        seen.ended.set()

    app.websocket("/small", max_message_size=1000)(echo)

    @app.websocket("/refuse")
    async def refuse(ws: WebSocket) -> None:
        await ws.close()

    @app.websocket("/forget")
    async def forget(ws: WebSocket) -> None:
        return None

    @app.websocket("/broken")
    async def broken(ws: WebSocket) -> None:
        raise RuntimeError("handler failed before accepting")

    @app.websocket("/fails-later")
    async def fails_later(ws: WebSocket) -> None:
        await ws.accept()
        await ws.receive()
        raise RuntimeError("handler failed after accepting")

    @app.websocket("/flood")
    async def flood(ws: WebSocket) -> None:
        await ws.accept()
        piece = b"x" * 65536
        try:
            while True:
                await ws.send(piece)
                seen.sent += len(piece)
        except WebSocketDisconnect as exc:
            seen.codes.append(exc.code)
        finally:
            seen.ended.set()

    @app.websocket("/idle", max_queue=100_000)
    async def idle(ws: WebSocket) -> None:
        await ws.accept()
        await asyncio.sleep(3600)

    @app.websocket("/pings", ping_interval=0.2, ping_timeout=0.3)
    async def pings(ws: WebSocket) -> None:
        await ws.accept()
        try:
            await ws.receive()
        except WebSocketDisconnect as exc:
            seen.codes.append(exc.code)
        finally:
            seen.ended.set()

    @app.websocket("/after-close")
    async def after_close(ws: WebSocket) -> None:
        await ws.accept()
        await ws.close()
        try:
            await ws.send_text("too late")
        except WebSocketDisconnect as exc:
            seen.codes.append(exc.code)
        seen.ended.set()

    @app.get("/plain")
    async def plain(request: veter.Request) -> str:
        return "plain"

    return app


def connect(server: RunningServer) -> WsClient:
    return WsClient(server.connect())


def test_echo_text_and_binary_and_the_close_handshake(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        assert ws.handshake("/ws") == 101
        assert ws.header("x-request-id")
        for payload, opcode in [("héllo".encode(), TEXT), (b"\x00\xff" * 100, BINARY), (b"", TEXT)]:
            ws.send(frame(opcode, payload))
            got = ws.recv_frame()
            assert (got.fin, got.opcode, got.payload) == (True, opcode, payload)
        big = bytes(range(256)) * 1000  # 256 KB: a 64-bit length
        ws.send(frame(BINARY, big))
        assert ws.recv_frame().payload == big
        ws.send(close_frame(1000, b"done"))
        reply = ws.recv_frame()
        assert reply.opcode == CLOSE and reply.close_code == 1000
        assert ws.closed_by_server()
    assert seen.ended.wait(5)
    assert seen.codes == [1000]


def test_fragments_with_a_ping_between_them_and_a_split_character(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/ws")
        text = "κόσμε".encode()
        ws.send(frame(TEXT, text[:3], fin=False))  # cuts a two-byte character
        ws.send(frame(PING, b"are you there"))
        ws.send(frame(CONT, text[3:7], fin=False))
        ws.send(frame(CONT, text[7:], fin=True))
        pong = ws.recv_frame()
        assert (pong.opcode, pong.payload) == (PONG, b"are you there")
        echoed = ws.recv_frame()
        assert (echoed.opcode, echoed.payload) == (TEXT, text)


def test_frames_sent_with_the_handshake_are_not_lost(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    with server.connect() as sock:
        ws = WsClient(sock)
        assert ws.handshake("/ws", after=frame(TEXT, b"early") + frame(TEXT, b"bird")) == 101
        assert ws.recv_frame().payload == b"early"
        assert ws.recv_frame().payload == b"bird"


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (frame(TEXT, b"ok \xff"), 1007),  # invalid UTF-8
        (frame(TEXT, b"\xed\xa0\x80"), 1007),  # a surrogate
        (frame(TEXT, b"x", mask=False), 1002),  # unmasked client frame
        (frame(TEXT, b"x", rsv=4), 1002),  # RSV1 without permessage-deflate
        (frame(0x3, b"x"), 1002),  # reserved opcode
        (frame(PING, b"x" * 126), 1002),  # control frame too long
        (frame(PING, b"x", fin=False), 1002),  # fragmented control frame
        (frame(CONT, b"x"), 1002),  # continuation of nothing
        (frame(TEXT, b"a", fin=False) + frame(TEXT, b"b"), 1002),  # new message mid-message
        (frame(CLOSE, b"\x03"), 1002),  # one-byte close payload
        (close_frame(1005), 1002),  # a code never sent on the wire
        (close_frame(1000, b"\xff"), 1007),  # close reason not UTF-8
    ],
)
def test_protocol_errors_fail_the_connection(serve: Serve, data: bytes, code: int) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/ws")
        ws.send(data)
        reply = ws.recv_frame()
        assert reply.opcode == CLOSE and reply.close_code == code
        assert ws.closed_by_server()
    assert seen.ended.wait(5)
    assert seen.codes == [code]


def test_a_message_over_the_limit_closes_with_1009_even_in_fragments(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/small")
        ws.send(frame(BINARY, b"x" * 1000))
        assert ws.recv_frame().payload == b"x" * 1000
        ws.send(frame(BINARY, b"x" * 600, fin=False) + frame(CONT, b"x" * 600))
        reply = ws.recv_frame()
        assert reply.close_code == 1009
        assert ws.closed_by_server()
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/small")
        # Refused from its header: the 10 MB payload is never sent.
        ws.send(frame(BINARY, b"")[:1] + bytes([0x80 | 127]) + struct.pack("!Q", 10_000_000) + b"mask")
        assert ws.recv_frame().close_code == 1009


def test_server_close_with_code_reason_path_params_and_subprotocol(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        assert ws.handshake("/rooms/blue", headers={"Sec-WebSocket-Protocol": "x, chat"}) == 101
        assert ws.header("sec-websocket-protocol") == "chat"
        hello = ws.recv_frame()
        import json

        body = json.loads(hello.payload)
        assert (
            body["room"] == "blue"
            and body["subprotocol"] == "chat"
            and body["id"] == ws.header("x-request-id")
        )
        closing = ws.recv_frame()
        assert closing.close_code == 4000 and closing.payload[2:] == b"bye"
        ws.send(close_frame(4000))
        assert ws.closed_by_server()
    assert seen.ended.wait(5)


def test_refusals_before_accept(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    for path, status in [("/refuse", 403), ("/forget", 403), ("/broken", 500)]:
        with server.connect() as sock:
            ws = WsClient(sock)
            assert ws.handshake(path) == status
            assert ws.header("connection") == "close"
            assert ws.closed_by_server()


def test_plain_requests_and_bad_handshakes(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    with server.connect() as sock:
        # Not a handshake: 426, and the connection stays usable.
        sock.sendall(b"GET /ws HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
        (first, second), _closed = read_responses(sock, 2)
        assert first.status == 426 and first.headers["upgrade"] == "websocket"
        assert second.content == b"plain"
    for extra, status in [
        ("Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", 426),
        ("Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short\r\n", 400),
        ("Sec-WebSocket-Version: 13\r\n", 400),
    ]:
        with server.connect() as sock:
            sock.sendall(
                b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + extra.encode()
                + b"\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            (response,), closed = read_responses(sock, 1)
            assert response.status == status
            # The bytes after a refused handshake are never read as HTTP.
            assert closed or response.headers["connection"] == "close"


def test_handler_failing_after_accept_closes_with_1011(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/fails-later")
        ws.send(frame(TEXT, b"go"))
        assert ws.recv_frame().close_code == 1011
        ws.send(close_frame(1011))
        assert ws.closed_by_server()


def test_send_after_close_raises_disconnect(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/after-close")
        assert ws.recv_frame().close_code == 1000
        ws.send(close_frame(1000))
        assert ws.closed_by_server()
    assert seen.ended.wait(5)
    assert seen.codes == [1000]


def test_a_client_that_vanishes_ends_the_handler(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/ws")
        ws.send(frame(TEXT, b"hi"))
        ws.recv_frame()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    assert seen.ended.wait(5)
    assert seen.codes == [1006]


def test_unanswered_pings_close_the_connection(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/pings")
        started = time.monotonic()
        ping = ws.recv_frame()
        assert ping.opcode == PING
        # This client does not answer: 0.3 s later the server gives up.
        closing = ws.recv_frame()
        assert closing.close_code == 1011
        assert time.monotonic() - started < 3
    assert seen.ended.wait(10)
    assert seen.codes == [1011]


def test_answered_pings_keep_the_connection(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/pings")
        for _ in range(4):
            ping = ws.recv_frame()
            assert ping.opcode == PING
            ws.send(frame(PONG, ping.payload))
        ws.send(close_frame(1000))
        assert ws.recv_frame().close_code == 1000
    assert seen.ended.wait(5)
    assert seen.codes == [1000]


def test_a_client_that_does_not_read_pauses_the_sender(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    with server.connect() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        ws = WsClient(sock)
        ws.handshake("/flood")
        time.sleep(1.0)
        # Without backpressure the handler would have queued gigabytes by now.
        assert seen.sent < 16 * 1024 * 1024, seen.sent
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    assert seen.ended.wait(10)


def send_until_blocked(sock: socket.socket, message: bytes, limit: int) -> int | None:
    """Send ``message`` again and again until a send times out (the peer stopped
    reading); how many bytes went out then, or None if ``limit`` went out first."""
    sent = 0
    while sent < limit:
        try:
            sock.sendall(message)
        except TimeoutError:
            return sent
        sent += len(message)
    return None


def test_a_handler_that_does_not_receive_stops_the_reading(serve: Serve) -> None:
    server = serve(make_app(Seen()))
    with server.connect() as sock:
        ws = WsClient(sock)
        ws.handshake("/idle")
        sock.settimeout(2.0)
        sent = send_until_blocked(sock, frame(BINARY, b"y" * 10_000), 200 * 1024 * 1024)
        # Queue (100 KB) plus kernel buffers, not the 200 MB offered.
        assert sent is not None, "the server read all 200 MB into memory"
        assert sent < 32 * 1024 * 1024
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_graceful_stop_closes_websockets_with_1001(serve: Serve) -> None:
    seen = Seen()
    server = serve(make_app(seen))
    sock = server.connect()
    ws = WsClient(sock)
    ws.handshake("/ws")
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    closing = ws.recv_frame()
    assert closing.close_code == 1001
    ws.send(close_frame(1001))
    assert ws.closed_by_server()
    stopper.join(20)
    sock.close()
    assert seen.codes == [1001]


def test_middleware_sees_the_handshake(serve: Serve) -> None:
    app = make_app(Seen())

    @app.middleware
    async def tag(request: veter.Request, call_next: Callable) -> veter.Response:  # type: ignore[type-arg]
        response = await call_next(request)
        response.set_header("X-Seen", request.path)
        return response  # type: ignore[no-any-return]

    server = serve(app)
    with server.connect() as sock:
        ws = WsClient(sock)
        assert ws.handshake("/ws") == 101
        assert ws.header("x-seen") == "/ws"
        ws.send(frame(TEXT, b"through middleware"))
        assert ws.recv_frame().payload == b"through middleware"


def test_a_real_client_library(serve: Serve) -> None:
    websockets = pytest.importorskip("websockets.asyncio.client")
    server = serve(make_app(Seen()))

    async def talk() -> list[str | bytes]:
        out: list[str | bytes] = []
        async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws", max_size=None) as ws:
            for message in ["a", b"b", "ü" * 100_000, bytes(300_000)]:
                await ws.send(message)
                out.append(await ws.recv())
            await ws.ping()
        return out

    got = asyncio.run(talk())
    assert got == ["a", b"b", "ü" * 100_000, bytes(300_000)]
