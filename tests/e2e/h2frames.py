"""HTTP/2 frames built by hand (RFC 9113 section 4 and 6) and HPACK blocks without
Huffman coding (RFC 7541), for clients that misbehave on purpose: the `h2` package
refuses to send most of what the flood tests send. `Peer` is a blocking client
socket whose reader thread collects what the server sends back, so the test can
write as fast as it likes and still learn how the connection ended."""

from __future__ import annotations

import contextlib
import enum
import socket
import struct
import threading
import time
from dataclasses import dataclass

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADER_LEN = 9


class Type(enum.IntEnum):
    DATA = 0x0
    HEADERS = 0x1
    PRIORITY = 0x2
    RST_STREAM = 0x3
    SETTINGS = 0x4
    PUSH_PROMISE = 0x5
    PING = 0x6
    GOAWAY = 0x7
    WINDOW_UPDATE = 0x8
    CONTINUATION = 0x9


class Flag(enum.IntFlag):
    END_STREAM = 0x1
    ACK = 0x1
    END_HEADERS = 0x4
    PADDED = 0x8
    PRIORITY = 0x20


class Code(enum.IntEnum):
    NO_ERROR = 0x0
    PROTOCOL_ERROR = 0x1
    INTERNAL_ERROR = 0x2
    FLOW_CONTROL_ERROR = 0x3
    SETTINGS_TIMEOUT = 0x4
    STREAM_CLOSED = 0x5
    FRAME_SIZE_ERROR = 0x6
    REFUSED_STREAM = 0x7
    CANCEL = 0x8
    COMPRESSION_ERROR = 0x9
    CONNECT_ERROR = 0xA
    ENHANCE_YOUR_CALM = 0xB
    INADEQUATE_SECURITY = 0xC
    HTTP_1_1_REQUIRED = 0xD


class Setting(enum.IntEnum):
    HEADER_TABLE_SIZE = 0x1
    ENABLE_PUSH = 0x2
    MAX_CONCURRENT_STREAMS = 0x3
    INITIAL_WINDOW_SIZE = 0x4
    MAX_FRAME_SIZE = 0x5
    MAX_HEADER_LIST_SIZE = 0x6


# Frames -------------------------------------------------------------------------


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    assert len(payload) < 1 << 24 and 0 <= stream < 1 << 31
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream) + payload


def settings(*pairs: tuple[int, int]) -> bytes:
    return frame(Type.SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def settings_ack() -> bytes:
    return frame(Type.SETTINGS, Flag.ACK, 0)


def ping(opaque: bytes = b"\0" * 8, *, ack: bool = False) -> bytes:
    assert len(opaque) == 8
    return frame(Type.PING, Flag.ACK if ack else 0, 0, opaque)


def headers(stream: int, block: bytes, *, end_stream: bool, end_headers: bool = True) -> bytes:
    flags = (Flag.END_STREAM if end_stream else 0) | (Flag.END_HEADERS if end_headers else 0)
    return frame(Type.HEADERS, flags, stream, block)


def continuation(stream: int, block: bytes, *, end_headers: bool) -> bytes:
    return frame(Type.CONTINUATION, Flag.END_HEADERS if end_headers else 0, stream, block)


def data(stream: int, payload: bytes, *, end_stream: bool) -> bytes:
    return frame(Type.DATA, Flag.END_STREAM if end_stream else 0, stream, payload)


def rst_stream(stream: int, code: int) -> bytes:
    return frame(Type.RST_STREAM, 0, stream, struct.pack(">I", code))


def window_update(stream: int, increment: int) -> bytes:
    return frame(Type.WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def goaway(last_stream: int, code: int) -> bytes:
    return frame(Type.GOAWAY, 0, 0, struct.pack(">II", last_stream, code))


# HPACK without Huffman ------------------------------------------------------------


def integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """RFC 7541 5.1: ``value`` in an N-bit prefix, ``first`` holding the bits above it."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def string(raw: bytes) -> bytes:
    """RFC 7541 5.2, the H bit clear: the length, then the raw octets."""
    return integer(len(raw), 7) + raw


def indexed(index: int) -> bytes:
    """An indexed field (6.1): one byte up to index 126."""
    return integer(index, 7, 0x80)


def literal_indexed(name: bytes, value: bytes) -> bytes:
    """A literal with incremental indexing and a new name (6.2.1): added to the table."""
    return b"\x40" + string(name) + string(value)


def literal(name: bytes, value: bytes) -> bytes:
    """A literal without indexing and a new name (6.2.2)."""
    return b"\x00" + string(name) + string(value)


# The first entry of the dynamic table (RFC 7541 2.3.3: the static table has 61).
FIRST_DYNAMIC = 62


def request(method: bytes, path: bytes, *, authority: bytes = b"t") -> bytes:
    """A request's header block, every field a literal (nothing in the dynamic table)."""
    return (
        literal(b":method", method)
        + literal(b":scheme", b"http")
        + literal(b":path", path)
        + literal(b":authority", authority)
    )


# Reading --------------------------------------------------------------------------


@dataclass
class Frame:
    kind: int
    flags: int
    stream: int
    payload: bytes

    @property
    def code(self) -> Code:
        """The error code of a GOAWAY or RST_STREAM."""
        assert self.kind in (Type.GOAWAY, Type.RST_STREAM)
        at = 4 if self.kind == Type.GOAWAY else 0
        return Code(struct.unpack(">I", self.payload[at : at + 4])[0])

    @property
    def last_stream(self) -> int:
        assert self.kind == Type.GOAWAY
        return int(struct.unpack(">I", self.payload[:4])[0]) & 0x7FFFFFFF

    def __repr__(self) -> str:
        name = Type(self.kind).name if self.kind in Type._value2member_map_ else hex(self.kind)
        more = f" {self.code.name}" if self.kind in (Type.GOAWAY, Type.RST_STREAM) else ""
        return f"<{name} stream={self.stream} flags={self.flags:#x} len={len(self.payload)}{more}>"


def parse(buf: bytearray) -> Frame | None:
    """Takes one whole frame off the front of ``buf``, or None if it has none."""
    if len(buf) < HEADER_LEN:
        return None
    length = int.from_bytes(buf[:3], "big")
    if len(buf) < HEADER_LEN + length:
        return None
    kind, flags, stream = struct.unpack(">BBI", buf[3:HEADER_LEN])
    payload = bytes(buf[HEADER_LEN : HEADER_LEN + length])
    del buf[: HEADER_LEN + length]
    return Frame(kind, flags, stream & 0x7FFFFFFF, payload)


class Peer:
    """A raw HTTP/2 client connection. The preface and ``first_settings`` go out at
    once; unless ``reading`` is false, a thread reads every frame the server sends
    (the bodies of DATA frames are counted, not kept) until the connection ends:
    ``goaway`` is the server's GOAWAY, ``ended`` how the socket ended ("eof" or
    "reset"), ``statuses`` the answers' statuses and ``resets`` the RST_STREAM
    codes, by stream. Answer heads are decoded with the `hpack` package (the server
    is not under test there)."""

    def __init__(
        self,
        port: int,
        first_settings: tuple[tuple[int, int], ...] = (),
        *,
        reading: bool = True,
        rcvbuf: int | None = None,
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Before connect, so that the window the client announces is small too.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.goaway: Frame | None = None
        self.ended: str | None = None
        self.ended_at: float | None = None
        self.resets: dict[int, Code] = {}
        self.statuses: dict[int, int] = {}
        self._decoder = hpack.Decoder()
        self._block = b""
        self.data_bytes: dict[int, int] = {}
        self.frames: dict[int, int] = {}
        self.send_error: OSError | None = None
        self._changed = threading.Condition()
        self._closing = False
        self._buf = bytearray()
        self.send(PREFACE + settings(*first_settings))
        self._handshake()
        self._reader: threading.Thread | None = None
        if reading:
            self.start_reading()

    def start_reading(self) -> None:
        """Starts the reader thread (at once unless the peer was made not reading)."""
        assert self._reader is None
        self._reader = threading.Thread(target=self._read, name="h2-peer-reader", daemon=True)
        self._reader.start()

    def send(self, raw: bytes) -> bool:
        """Writes ``raw``; false (and ``send_error`` set) once the socket is broken."""
        try:
            self.sock.sendall(raw)
        except OSError as exc:
            self.send_error = exc
            return False
        return True

    @property
    def over(self) -> bool:
        """The server sent GOAWAY, or the socket is finished."""
        return self.goaway is not None or self.ended is not None

    def _handshake(self) -> None:
        """Reads up to the server's SETTINGS and acknowledges them, so that only
        this thread ever writes (the reader thread never does)."""
        while True:
            chunk = self.sock.recv(1 << 16)
            assert chunk, "the server closed the connection before its SETTINGS"
            self._buf += chunk
            while (f := parse(self._buf)) is not None:
                self._take(f)
                if f.kind == Type.SETTINGS and not f.flags & Flag.ACK:
                    self.send(settings_ack())
                    return

    def _read(self) -> None:
        while True:
            while (f := parse(self._buf)) is not None:
                self._take(f)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                self._end("reset")
                return
            if not chunk:
                self._end("eof")
                return
            self._buf += chunk

    def _take(self, f: Frame) -> None:
        with self._changed:
            self.frames[f.kind] = self.frames.get(f.kind, 0) + 1
            if f.kind == Type.GOAWAY and self.goaway is None:
                self.goaway = f
            elif f.kind == Type.RST_STREAM:
                self.resets[f.stream] = f.code
            elif f.kind in (Type.HEADERS, Type.CONTINUATION):
                self._head(f)
            elif f.kind == Type.DATA:
                self.data_bytes[f.stream] = self.data_bytes.get(f.stream, 0) + len(f.payload)
            self._changed.notify_all()

    def _head(self, f: Frame) -> None:
        block = f.payload
        if f.kind == Type.HEADERS and f.flags & Flag.PADDED:
            block = block[1 : len(block) - block[0]]
        if f.kind == Type.HEADERS and f.flags & Flag.PRIORITY:
            block = block[5:]
        self._block += block
        if not f.flags & Flag.END_HEADERS:
            return
        fields = dict(self._decoder.decode(self._block, raw=True))
        self._block = b""
        status = fields.get(b":status")
        if status is not None and f.stream not in self.statuses:
            self.statuses[f.stream] = int(status)

    def _end(self, how: str) -> None:
        with self._changed:
            if self._closing:
                return  # this side closed it
            self.ended = how
            self.ended_at = time.monotonic()
            self._changed.notify_all()

    def wait(self, predicate: object, timeout: float) -> bool:
        """Waits (on the reader's notifications, no polling) until ``predicate()``."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)  # type: ignore[arg-type]

    def wait_ended(self, timeout: float) -> bool:
        """Waits until the socket ends (EOF or reset)."""
        return self.wait(lambda: self.ended is not None, timeout)

    def close(self) -> None:
        """Closes the socket; ``ended`` keeps saying only how the server ended it."""
        with self._changed:
            self._closing = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        if self._reader is not None:
            self._reader.join(10)
