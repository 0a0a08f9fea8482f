"""permessage-deflate (RFC 7692) and fail-fast UTF-8 over real sockets: the
negotiation, compressed messages both ways (with context takeover, fragmented,
under the minimum size), the size limit on the inflated bytes, a deflate bomb, bad
compressed data, and bad text caught at the read that carries it."""

from __future__ import annotations

import asyncio
import re
import socket
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import veter
from veter import WebSocket

from .conftest import RunningServer
from .wsclient import BINARY, CLOSE, CONT, TEXT, Frame, WsClient, frame

Serve = Callable[..., RunningServer]
OFFER = {"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits"}
TAIL = b"\x00\x00\xff\xff"
RSV1 = 4  # wsclient's rsv argument: bits 6-4 of the first byte


def make_app() -> veter.App:
    app = veter.App()

    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        async for message in ws:
            await ws.send(message)

    app.websocket("/ws")(echo)
    app.websocket("/small", max_message_size=1000)(echo)
    app.websocket("/plain", deflate=False)(echo)
    app.websocket("/fresh", deflate_window_bits=9, deflate_min_size=0)(echo)
    return app


class Deflater:
    """The client's side: one deflate stream across messages (context takeover)."""

    def __init__(self) -> None:
        self.stream = zlib.compressobj(9, zlib.DEFLATED, -15)

    def message(self, data: bytes) -> bytes:
        out = self.stream.compress(data) + self.stream.flush(zlib.Z_SYNC_FLUSH)
        assert out.endswith(TAIL)
        return out[: -len(TAIL)]


class Inflater:
    def __init__(self) -> None:
        self.stream = zlib.decompressobj(-15)

    def message(self, payload: bytes) -> bytes:
        return self.stream.decompress(payload + TAIL)


_opened: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_sockets(serve: Serve) -> Iterator[None]:
    """Closes the test's sockets before `serve` checks that none is left."""
    yield
    while _opened:
        _opened.pop().close()


def connect(server: RunningServer, path: str = "/ws", offer: dict[str, str] | None = OFFER) -> WsClient:
    sock = server.connect()
    _opened.append(sock)
    ws = WsClient(sock)
    assert ws.handshake(path, headers=offer) == 101
    return ws


def closed_with(ws: WsClient) -> int | None:
    reply = ws.recv_frame()
    assert reply.opcode == CLOSE, reply
    return reply.close_code


def test_negotiation(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server)
    assert ws.header("sec-websocket-extensions") == "permessage-deflate; server_max_window_bits=12"
    ws.sock.close()
    ws = connect(
        server, "/ws", {"Sec-WebSocket-Extensions": "permessage-deflate; server_no_context_takeover"}
    )
    agreed = ws.header("sec-websocket-extensions")
    assert agreed == "permessage-deflate; server_no_context_takeover; server_max_window_bits=12"
    ws.sock.close()
    # Declined: switched off on the route, or an offer RFC 7692 says to refuse; the
    # connection itself works, uncompressed.
    for path, offer in [
        ("/plain", OFFER),
        ("/ws", {"Sec-WebSocket-Extensions": "permessage-deflate; server_max_window_bits=16"}),
        ("/ws", {"Sec-WebSocket-Extensions": "x-webkit-deflate-frame"}),
    ]:
        ws = connect(server, path, offer)
        assert ws.header("sec-websocket-extensions") is None, (path, offer)
        ws.send(frame(TEXT, b"x" * 500))
        assert ws.recv_frame() == Frame(True, TEXT, b"x" * 500, False)
        ws.sock.close()


def test_compressed_messages_both_ways(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server)
    out, back = Deflater(), Inflater()
    document = ('{"id": %d, "name": "a fairly long name", "tags": ["red", "green", "blue"]} ' * 20).encode()
    for i in range(5):
        message = document.replace(b"%d", str(i).encode())
        ws.send(frame(TEXT, out.message(message), rsv=RSV1))
        got = ws.recv_frame()
        assert got.rsv1 and got.opcode == TEXT
        assert back.message(got.payload) == message
        # Context takeover: the repeats get much smaller than the first.
        if i:
            assert len(got.payload) < len(message) // 20
    # Fragmented: RSV1 on the first frame only; the continuation carries the rest.
    packed = out.message(b"fragmented " * 100)
    ws.send(frame(BINARY, packed[:5], fin=False, rsv=RSV1))
    ws.send(frame(CONT, packed[5:], fin=True))
    got = ws.recv_frame()
    assert (got.rsv1, got.opcode, back.message(got.payload)) == (True, BINARY, b"fragmented " * 100)
    # Under the minimum size (128 bytes): sent as it is; uncompressed input is fine.
    ws.send(frame(TEXT, b"short"))
    assert ws.recv_frame() == Frame(True, TEXT, b"short", False)
    # An empty compressed message.
    ws.send(frame(TEXT, out.message(b""), rsv=RSV1))
    assert ws.recv_frame() == Frame(True, TEXT, b"", False)


def test_an_eight_bit_window_and_no_context_takeover(serve: Serve) -> None:
    server = serve(make_app())
    offer = {
        "Sec-WebSocket-Extensions": "permessage-deflate; server_max_window_bits=8; server_no_context_takeover"
    }
    ws = connect(server, "/fresh", offer)
    agreed = ws.header("sec-websocket-extensions") or ""
    assert "server_max_window_bits=8" in agreed and "server_no_context_takeover" in agreed
    for _ in range(3):
        message = bytes(range(256)) * 40
        ws.send(frame(BINARY, Deflater().message(message), rsv=RSV1))
        got = ws.recv_frame()
        # Each message on its own, with a 256-byte window.
        assert got.rsv1 and zlib.decompressobj(-8).decompress(got.payload + TAIL) == message


def test_the_limit_applies_to_the_inflated_size(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server, "/small")
    ws.send(frame(BINARY, Deflater().message(bytes(1000)), rsv=RSV1))
    assert Inflater().message(ws.recv_frame().payload) == bytes(1000)
    ws.send(frame(BINARY, Deflater().message(bytes(1001)), rsv=RSV1))
    assert closed_with(ws) == 1009


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match
    return int(match.group(1)) * 1024


def _bomb_pieces(total: int, piece: int) -> Iterator[bytes]:
    """A deflate stream of `total` zero bytes, compressed as tightly as deflate
    goes (about 1,030 to 1), in pieces of `piece` compressed bytes."""
    stream = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    pending = b""
    for _ in range(total // len(zeros)):
        pending += stream.compress(zeros)
        while len(pending) >= piece:
            yield pending[:piece]
            pending = pending[piece:]
    yield pending + stream.flush(zlib.Z_SYNC_FLUSH)[: -len(TAIL)]


def test_a_deflate_bomb_closes_with_1009_without_inflating_it(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server)
    before = _rss()
    # A 1 GiB message of zeros, sent as 1 KiB compressed frames. Deflate inflates at
    # most ~1,030:1, so the first KiB alone is about the whole 1 MiB limit.
    pieces = _bomb_pieces(1 << 30, 1024)
    sent = 0
    try:
        ws.send(frame(BINARY, next(pieces), fin=False, rsv=RSV1))
        for piece in pieces:
            ws.send(frame(CONT, piece, fin=False))
            sent += 1
            if sent == 8:
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert closed_with(ws) == 1009
    assert ws.closed_by_server()
    grown = _rss() - before
    assert grown < 16 << 20, f"RSS grew by {grown / (1 << 20):.1f} MiB"


def test_bad_compressed_data_and_bad_rsv1(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server)
    ws.send(frame(TEXT, b"\xff\xff\xff\xff\xff", rsv=RSV1))
    assert closed_with(ws) == 1007
    ws = connect(server)
    ws.send(frame(TEXT, Deflater().message(b"x" * 10), fin=False, rsv=RSV1))
    ws.send(frame(CONT, b"more", rsv=RSV1))  # RSV1 belongs to the first frame only
    assert closed_with(ws) == 1002
    ws = connect(server, offer=None)
    ws.send(frame(TEXT, Deflater().message(b"x" * 10), rsv=RSV1))  # nothing was agreed
    assert closed_with(ws) == 1002


@pytest.mark.parametrize("compressed", [False, True])
def test_bad_text_fails_at_the_read_that_carries_it(serve: Serve, compressed: bool) -> None:
    """A text frame announced as 100 KB whose first bytes are not UTF-8 is failed
    with 1007 when they arrive, while the rest of the frame is still to come."""
    server = serve(make_app())
    ws = connect(server, offer=OFFER if compressed else None)
    body = b"fine so far \xc0\xaf and the rest" + b"x" * 100_000
    payload = Deflater().message(body) if compressed else body
    whole = frame(TEXT, payload, rsv=RSV1 if compressed else 0)
    ws.send(whole[: len(whole) // 4] if not compressed else whole[:60])
    ws.sock.settimeout(5)
    assert closed_with(ws) == 1007


def test_good_messages_before_a_bad_frame_are_answered_first(serve: Serve) -> None:
    server = serve(make_app())
    ws = connect(server, offer=None)
    ws.send(frame(TEXT, b"first") + frame(TEXT, b"second") + frame(TEXT, b"bad", rsv=2))
    assert ws.recv_frame().payload == b"first"
    assert ws.recv_frame().payload == b"second"
    assert closed_with(ws) == 1002
    assert ws.closed_by_server()


def test_a_real_client_library_with_compression(serve: Serve) -> None:
    websockets = pytest.importorskip("websockets.asyncio.client")
    server = serve(make_app())

    async def talk() -> tuple[str | None, list[str | bytes]]:
        out: list[str | bytes] = []
        async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws", max_size=None) as ws:
            for message in ["a" * 1000, b"b" * 5000, "ü" * 100_000, bytes(300_000), "tiny"]:
                await ws.send(message)
                out.append(await ws.recv())
            agreed = ws.response.headers.get("Sec-WebSocket-Extensions")
        return agreed, out

    agreed, got = asyncio.run(talk())
    assert agreed == "permessage-deflate; server_max_window_bits=12"
    assert got == ["a" * 1000, b"b" * 5000, "ü" * 100_000, bytes(300_000), "tiny"]
