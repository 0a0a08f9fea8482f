"""A minimal WebSocket client over a plain socket, for tests that need to send
exactly the frames they mean (bad ones included) and see every frame back."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct
from dataclasses import dataclass

from veter.testing_websocket import (
    BINARY,
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    client_frame,
    handshake_request,
)

__all__ = ["BINARY", "CLOSE", "CONT", "PING", "PONG", "TEXT", "Frame", "WsClient", "close_frame", "frame"]

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT = CONTINUATION


@dataclass
class Frame:
    fin: bool
    opcode: int
    payload: bytes
    rsv1: bool = False  # permessage-deflate: a compressed message

    @property
    def close_code(self) -> int | None:
        if self.opcode != CLOSE or len(self.payload) < 2:
            return None
        code: int = struct.unpack("!H", self.payload[:2])[0]
        return code


def frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True, rsv: int = 0) -> bytes:
    return client_frame(opcode, payload, fin=fin, masked=mask, rsv=rsv)


def close_frame(code: int, reason: bytes = b"") -> bytes:
    return frame(CLOSE, struct.pack("!H", code) + reason)


class WsClient:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.status = 0
        self.head = ""

    def handshake(
        self, path: str = "/ws", *, headers: dict[str, str] | None = None, after: bytes = b""
    ) -> int:
        """Sends the handshake (plus ``after`` in the same write); returns the status."""
        key = base64.b64encode(os.urandom(16)).decode()
        request = handshake_request(path, list((headers or {}).items()), None, key=key)
        self.sock.sendall(request + after)
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed during the handshake: {self.buf!r}")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ", 2)[1])
        if self.status == 101:
            expected = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            assert f"Sec-WebSocket-Accept: {expected}" in self.head, self.head
        return self.status

    def header(self, name: str) -> str | None:
        for line in self.head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _need(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_frame(self) -> Frame:
        b0, b1 = self._need(2)
        assert b1 & 0x80 == 0, "server frames are never masked"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._need(8))[0]
        return Frame(bool(b0 & 0x80), b0 & 0x0F, self._need(n), bool(b0 & 0x40))

    def closed_by_server(self) -> bool:
        """Reads until the server closes the TCP connection (True) or 10 s pass."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
