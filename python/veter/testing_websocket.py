"""The WebSocket side of the test client: ``client.websocket_connect(path)``.

The handshake goes through the same Rust protocol as a served request; after the
``101`` the in-memory transport is handed to veter's WebSocket protocol, and the
test talks to it in real frames (masked, as a client must), so every check the
server makes on the wire is made here too::

    with TestClient(app) as client, client.websocket_connect("/echo") as ws:
        ws.send_text("hi")
        assert ws.receive_text() == "hi"
"""

from __future__ import annotations

import asyncio
import base64
import os
import struct
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Self, TypeVar

import orjson

from veter.websockets import WebSocketDisconnect

if TYPE_CHECKING:
    from types import TracebackType

    from veter.testing import MemoryTransport, TestResponse

__all__ = ["AsyncTestWebSocket", "TestWebSocket", "WebSocketRejected", "handshake_request"]

T = TypeVar("T")

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketRejected(Exception):
    """The server answered the handshake with something other than ``101``:
    ``response`` is that answer (403 when the handler refused, 404, 426...)."""

    def __init__(self, response: TestResponse) -> None:
        super().__init__(f"WebSocket handshake refused: {response.status_code} {response.text!r}")
        self.response = response


def handshake_request(
    path: str, headers: list[tuple[str, str]], subprotocols: list[str] | None, *, key: str | None = None
) -> bytes:
    """The client's opening handshake (RFC 6455 section 4.1) for ``path``, with
    ``key`` as Sec-WebSocket-Key (a random one by default)."""
    key = key or base64.b64encode(os.urandom(16)).decode()
    pairs = [
        ("Host", "testserver"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key),
        ("Sec-WebSocket-Version", "13"),
    ]
    if subprotocols:
        pairs.append(("Sec-WebSocket-Protocol", ", ".join(subprotocols)))
    given = {name.lower() for name, _ in headers}
    pairs = [pair for pair in pairs if pair[0].lower() not in given] + headers
    lines = [f"GET {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in pairs]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def client_frame(
    opcode: int, payload: bytes, *, fin: bool = True, masked: bool = True, rsv: int = 0
) -> bytes:
    """One frame as a client sends it: masked, reserved bits clear (``masked=False``
    and ``rsv`` make the mistakes a server must refuse)."""
    head = bytearray([(0x80 if fin else 0) | (rsv << 4) | opcode])
    n = len(payload)
    bit = 0x80 if masked else 0
    if n < 126:
        head.append(bit | n)
    elif n < 1 << 16:
        head.append(bit | 126)
        head += struct.pack("!H", n)
    else:
        head.append(bit | 127)
        head += struct.pack("!Q", n)
    if not masked:
        return bytes(head) + payload
    mask = os.urandom(4)
    key = (mask * (n // 4 + 1))[:n]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
    return bytes(head) + mask + body


def _server_frame(data: bytearray, start: int) -> tuple[bool, int, bytes, int] | None:
    """(fin, opcode, payload, next offset) of the server frame at ``start``, or None
    when it is not all there yet. Server frames are never masked."""
    if len(data) - start < 2:
        return None
    first, second = data[start], data[start + 1]
    n, pos = second & 0x7F, start + 2
    if n == 126:
        if len(data) - pos < 2:
            return None
        (n,) = struct.unpack_from("!H", data, pos)
        pos += 2
    elif n == 127:
        if len(data) - pos < 8:
            return None
        (n,) = struct.unpack_from("!Q", data, pos)
        pos += 8
    if second & 0x80:
        raise AssertionError("the server sent a masked frame")
    if len(data) - pos < n:
        return None
    return bool(first & 0x80), first & 0x0F, bytes(data[pos : pos + n]), pos + n


class AsyncTestWebSocket:
    """A client connection to a WebSocket route, on the running loop."""

    def __init__(
        self, transport: MemoryTransport, response: TestResponse, offset: int, timeout: float
    ) -> None:
        self.response = response
        self.subprotocol: str | None = response.headers.get("sec-websocket-protocol")
        self.close_code: int | None = None
        self.close_reason = ""
        self.pongs = 0
        self._transport = transport
        self._offset = offset
        self._timeout = timeout
        self._sent_close = False

    async def send(self, data: str | bytes) -> None:
        """A text message for ``str``, a binary one for ``bytes``."""
        if isinstance(data, str):
            await self.send_frame(TEXT, data.encode())
        else:
            await self.send_frame(BINARY, bytes(data))

    async def send_text(self, data: str) -> None:
        await self.send_frame(TEXT, data.encode())

    async def send_bytes(self, data: bytes) -> None:
        await self.send_frame(BINARY, bytes(data))

    async def send_json(self, data: Any, *, binary: bool = False) -> None:
        await self.send_frame(BINARY if binary else TEXT, orjson.dumps(data))

    async def ping(self, data: bytes = b"") -> None:
        await self.send_frame(PING, data)

    async def send_frame(self, opcode: int, payload: bytes, *, fin: bool = True) -> None:
        """One frame as given (fragments, control frames, or a deliberate mistake)."""
        await self.send_raw(client_frame(opcode, payload, fin=fin))

    async def send_raw(self, data: bytes) -> None:
        """Bytes as they are, for tests of malformed input."""
        if self.close_code is not None or self._transport.closed:
            raise WebSocketDisconnect(self.close_code or 1006, self.close_reason)
        self._transport.get_protocol().data_received(data)
        await asyncio.sleep(0)  # let the handler see it

    async def receive(self) -> str | bytes:
        """The next message; ``WebSocketDisconnect`` once the server has closed.
        Pings from the server are answered on the way."""
        async with asyncio.timeout(self._timeout):
            opcode, parts = None, []
            while True:
                fin, kind, payload = await self._next_frame()
                if kind == PING:
                    if not self._sent_close:
                        self._transport.get_protocol().data_received(client_frame(PONG, payload))
                    continue
                if kind == PONG:
                    self.pongs += 1
                    continue
                if kind == CLOSE:
                    self._closed_by(payload)
                    raise WebSocketDisconnect(self.close_code or 1005, self.close_reason)
                if opcode is None:
                    opcode = kind
                parts.append(payload)
                if fin:
                    message = b"".join(parts)
                    return message.decode() if opcode == TEXT else message

    async def receive_text(self) -> str:
        message = await self.receive()
        if not isinstance(message, str):
            raise TypeError(f"expected a text message, got {len(message)} bytes of binary")
        return message

    async def receive_bytes(self) -> bytes:
        message = await self.receive()
        if not isinstance(message, bytes):
            raise TypeError(f"expected a binary message, got text {message[:60]!r}")
        return message

    async def receive_json(self) -> Any:
        return orjson.loads(await self.receive())

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame and wait for the server's (messages still queued on the
        way are dropped)."""
        if self.close_code is not None:
            return
        if not self._sent_close and not self._transport.closed:
            self._sent_close = True
            payload = struct.pack("!H", code) + reason.encode() if code else b""
            self._transport.get_protocol().data_received(client_frame(CLOSE, payload))
        async with asyncio.timeout(self._timeout):
            while self.close_code is None:
                _fin, kind, payload = await self._next_frame()
                if kind == CLOSE:
                    self._closed_by(payload)

    def _closed_by(self, payload: bytes) -> None:
        self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
        self.close_reason = payload[2:].decode(errors="replace")
        if not self._sent_close and not self._transport.closed:
            # Answer the server's close, as RFC 6455 section 5.5.1 asks.
            self._sent_close = True
            self._transport.get_protocol().data_received(client_frame(CLOSE, payload[:2]))

    async def _next_frame(self) -> tuple[bool, int, bytes]:
        transport = self._transport
        while True:
            frame = _server_frame(transport.data, self._offset)
            if frame is not None:
                fin, opcode, payload, self._offset = frame
                return fin, opcode, payload
            if transport.closed:
                self.close_code = self.close_code or 1006
                raise WebSocketDisconnect(self.close_code, "connection closed without a close frame")
            await transport.changed()


class TestWebSocket:
    """The sync face of ``AsyncTestWebSocket``, for ``TestClient``."""

    __test__ = False

    def __init__(
        self, connect: Callable[[], Coroutine[Any, Any, AsyncTestWebSocket]], run: Callable[[Any], Any]
    ) -> None:
        self._connect = connect
        self._run = run
        self._ws: AsyncTestWebSocket | None = None

    def __enter__(self) -> Self:
        if self._ws is not None:
            raise RuntimeError("this WebSocket is open already: websocket_connect() makes a new one")
        self._ws = self._run(self._connect())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None and self._ws.close_code is None:
            self._call(self._ws.close())

    @property
    def ws(self) -> AsyncTestWebSocket:
        if self._ws is None:
            raise RuntimeError(
                "use websocket_connect() as a context manager: with client.websocket_connect(path) as ws"
            )
        return self._ws

    @property
    def subprotocol(self) -> str | None:
        return self.ws.subprotocol

    @property
    def response(self) -> TestResponse:
        return self.ws.response

    @property
    def close_code(self) -> int | None:
        return self.ws.close_code

    @property
    def close_reason(self) -> str:
        return self.ws.close_reason

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        result: T = self._run(coro)
        return result

    def send(self, data: str | bytes) -> None:
        self._call(self.ws.send(data))

    def send_text(self, data: str) -> None:
        self._call(self.ws.send_text(data))

    def send_bytes(self, data: bytes) -> None:
        self._call(self.ws.send_bytes(data))

    def send_json(self, data: Any, *, binary: bool = False) -> None:
        self._call(self.ws.send_json(data, binary=binary))

    def send_frame(self, opcode: int, payload: bytes, *, fin: bool = True) -> None:
        self._call(self.ws.send_frame(opcode, payload, fin=fin))

    def ping(self, data: bytes = b"") -> None:
        self._call(self.ws.ping(data))

    def receive(self) -> str | bytes:
        return self._call(self.ws.receive())

    def receive_text(self) -> str:
        return self._call(self.ws.receive_text())

    def receive_bytes(self) -> bytes:
        return self._call(self.ws.receive_bytes())

    def receive_json(self) -> Any:
        return self._call(self.ws.receive_json())

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._call(self.ws.close(code, reason))
