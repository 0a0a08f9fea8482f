"""The HTTP/2 fuzzer's client: a raw socket that writes a case's frames (whole, cut
at given points, or a byte at a time) and reads the server's frames with a strict
reader of its own (hyperframe and hpack; what breaks RFC 9113 is recorded as a
defect, not repaired).

The bytes are the case's, the same to every server, with three concessions to
the protocol, each made as any client makes it: a DATA frame waits until the
server's flow-control windows allow it (its SETTINGS, its WINDOW_UPDATEs); a
stream the server reset gets no more DATA, WINDOW_UPDATE or RST_STREAM (RFC 9113
8.1: the client stops sending; its trailers still go, as their header block
changes the HPACK table); a "barrier" waits until every stream opened before it is done. The
client's own window is replenished as the server's DATA is read (WINDOW_UPDATE
frames between the case's frames, never inside one). Once every stream is done,
a PING tells whether the connection is still usable.
"""

from __future__ import annotations

import hashlib
import itertools
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import hpack
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    ExtensionFrame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)
from hyperframe.frame import (
    Frame as HFrame,
)

from tests.hosted.fuzz.h2cases import MAX_FRAME, H2Case

BYTEWISE_PREFIX = 2048
READ_SIZE = 65536
RECV_POLL = 0.02
OPEN_CHECK = b"openchk!"
EMPTY_SHA = hashlib.sha256(b"").hexdigest()[:16]
CONNECTION_SPECIFIC = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}


@dataclass
class StreamResult:
    """What the client got on one stream."""

    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    interim: list[int] = field(default_factory=list)
    body_len: int = 0
    body_sha: str = EMPTY_SHA
    trailers: list[tuple[str, str]] | None = None
    ended: bool = False  # END_STREAM came
    reset: str | None = None  # the server's RST_STREAM code, by name
    defect: str | None = None

    def header(self, name: str) -> str | None:
        for n, v in self.headers:
            if n == name:
                return v
        return None


@dataclass
class H2Exchange:
    streams: dict[int, StreamResult]  # by request #
    end: str  # "open", "goaway:<CODE>", "eof", "reset", "timeout", "garbage"
    goaway_last: int | None = None
    defects: list[str] = field(default_factory=list)  # the connection's, not a stream's


def _code(value: int) -> str:
    names = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
             5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL",
             9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}  # fmt: skip
    return names.get(value, f"0x{value:x}")


class State:
    """What the reader learned and the writer waits on, under one condition."""

    def __init__(self, case: H2Case) -> None:
        self.cond = threading.Condition()
        self.settings_seen = False
        self.peer_initial = 65_535  # the server's SETTINGS_INITIAL_WINDOW_SIZE
        self.send_conn = 65_535  # what the server lets the client send on the connection
        self.send_stream: dict[int, int] = {}  # per stream: updates minus DATA sent
        self.granted_conn = 65_535 + case.connection_increment  # what the client lets the server send
        self.granted: dict[int, int] = {}  # per stream, beyond the initial window
        self.reset_by_server: set[int] = set()
        self.responded: set[int] = set()  # END_STREAM (or RST_STREAM) from the server
        self.closed = False
        self.goaway_last: int | None = None
        self.opened: set[int] = set()
        self.client_reset: set[int] = set()
        self.plan_done = False
        self.reactive: list[bytes] = []
        self.stop = False

    def done(self, sid: int) -> bool:
        return (
            sid in self.responded
            or sid in self.reset_by_server
            or sid in self.client_reset
            or self.closed
            or (self.goaway_last is not None and sid > self.goaway_last)
        )

    def can_send(self, sid: int, n: int) -> bool:
        window = self.peer_initial + self.send_stream.get(sid, 0)
        return self.settings_seen and self.send_conn >= n and window >= n


def _write(sock: socket.socket, case: H2Case, state: State, deadline: float, errors: list[str]) -> None:
    emitted = 0
    pending = bytearray()
    cuts = sorted(case.cuts) if case.delivery == "splits" else []

    def flush() -> None:
        nonlocal emitted, pending
        data = bytes(pending)
        pending = bytearray()
        start = emitted
        bounds = [0]
        if case.delivery == "splits":
            bounds += [c - start for c in cuts if start < c < start + len(data)]
        elif case.delivery == "bytewise" and start < BYTEWISE_PREFIX:
            bounds += list(range(1, min(len(data), BYTEWISE_PREFIX - start) + 1))
        bounds.append(len(data))
        for a, b in itertools.pairwise(bounds):
            if b > a:
                sock.sendall(data[a:b])
        emitted += len(data)

    def wait(predicate: Callable[[], bool]) -> None:
        """Until ``predicate()``, at a frame boundary: the client's own WINDOW_UPDATEs
        go out meanwhile (the server may be waiting for them)."""
        while time.monotonic() < deadline:
            with state.cond:
                state.cond.wait_for(
                    lambda: predicate() or bool(state.reactive), max(0.0, deadline - time.monotonic())
                )
                if predicate():
                    return
            take_reactive()
            flush()

    def take_reactive() -> None:
        with state.cond:
            frames, state.reactive = state.reactive, []
        for frame in frames:
            pending.extend(frame)

    try:
        for f in case.frames():
            if time.monotonic() > deadline or state.closed:
                break
            take_reactive()
            if f.kind == "barrier":
                flush()
                wait(lambda: state.closed or all(state.done(s) for s in state.opened))
                continue
            sid = case.stream_id(f.index) if f.index is not None and f.index < len(case.requests) else 0
            if f.kind in ("data", "rst", "window") and sid and sid in state.reset_by_server:
                # The server reset the stream: the client stops sending on it. Header
                # blocks (trailers) still go: they change the HPACK table both sides keep.
                continue
            if f.kind == "window" and sid and sid in state.responded:
                continue  # the stream may be closed by now
            if f.kind == "data" and f.flow:
                if not state.can_send(sid, f.flow):
                    flush()
                    wait(lambda: state.closed or sid in state.reset_by_server or state.can_send(sid, f.flow))  # noqa: B023
                    if state.closed or sid in state.reset_by_server or not state.can_send(sid, f.flow):
                        continue
                with state.cond:
                    state.send_conn -= f.flow
                    state.send_stream[sid] = state.send_stream.get(sid, 0) - f.flow
            with state.cond:
                if f.kind == "headers":
                    state.opened.add(sid)
                elif f.kind == "rst":
                    state.client_reset.add(sid)
                elif f.kind == "window":
                    if sid:
                        state.granted[sid] = state.granted.get(sid, 0) + 4096
                    else:
                        state.granted_conn += int.from_bytes(f.data[-4:], "big") & 0x7FFFFFFF
                state.cond.notify_all()
            pending.extend(f.data)
        take_reactive()
        flush()
        with state.cond:
            state.plan_done = True
            state.cond.notify_all()
        while True:
            with state.cond:
                state.cond.wait_for(
                    lambda: state.stop or bool(state.reactive), max(0.0, deadline - time.monotonic())
                )
                if state.stop or not state.reactive or time.monotonic() > deadline:
                    return
            take_reactive()
            flush()
    except OSError as exc:
        errors.append(type(exc).__name__)


class Reader:
    """Reads the server's frames and keeps what each stream got."""

    def __init__(self, case: H2Case, state: State) -> None:
        self.case = case
        self.state = state
        self.buf = bytearray()
        self.decoder = hpack.Decoder()
        self.by_sid = {case.stream_id(i): i for i in range(len(case.requests))}
        self.streams: dict[int, StreamResult] = {}
        self.hashes: dict[int, hashlib._Hash] = {}
        self.block: tuple[int, bytearray, bool] | None = None  # a header block awaiting CONTINUATION
        self.defects: list[str] = []
        self.end: str | None = None
        self.ping_sent = False
        self.unacked_conn = 0
        self.unacked: dict[int, int] = {}
        self.received: dict[int, int] = {}
        self.received_conn = 0

    def feed(self) -> None:
        while len(self.buf) >= 9:
            frame, length = HFrame.parse_frame_header(memoryview(self.buf[:9]))
            if len(self.buf) < 9 + length:
                return
            if length > MAX_FRAME:
                self.defects.append(f"a {type(frame).__name__} of {length} bytes, over the frame size")
            frame.parse_body(memoryview(bytes(self.buf[9 : 9 + length])))
            del self.buf[: 9 + length]
            self.on_frame(frame)

    def stream(self, sid: int) -> StreamResult | None:
        i = self.by_sid.get(sid)
        if i is None or sid not in self.state.opened:
            self.defects.append(f"a frame on stream {sid}, which the client did not open")
            return None
        return self.streams.setdefault(i, StreamResult())

    def on_frame(self, frame: HFrame) -> None:
        state = self.state
        if self.block is not None and not isinstance(frame, ContinuationFrame):
            self.defects.append(f"a {type(frame).__name__} inside a header block")
            self.block = None
        if isinstance(frame, SettingsFrame):
            if "ACK" not in frame.flags:
                with state.cond:
                    initial = frame.settings.get(SettingsFrame.INITIAL_WINDOW_SIZE)
                    if initial is not None:
                        state.peer_initial = initial
                    state.settings_seen = True
                    state.cond.notify_all()
        elif isinstance(frame, WindowUpdateFrame):
            with state.cond:
                if frame.stream_id == 0:
                    state.send_conn += frame.window_increment
                else:
                    sid = frame.stream_id
                    state.send_stream[sid] = state.send_stream.get(sid, 0) + frame.window_increment
                state.cond.notify_all()
        elif isinstance(frame, PingFrame):
            if "ACK" in frame.flags and frame.opaque_data == OPEN_CHECK:
                self.end = self.end or "open"
        elif isinstance(frame, GoAwayFrame):
            with state.cond:
                state.goaway_last = frame.last_stream_id
                state.cond.notify_all()
            self.end = f"goaway:{_code(frame.error_code)}"
        elif isinstance(frame, RstStreamFrame):
            result = self.stream(frame.stream_id)
            if result is not None:
                result.reset = _code(frame.error_code)
                if result.ended and frame.error_code != 0:
                    result.defect = f"RST_STREAM {result.reset} after END_STREAM"
            with state.cond:
                state.reset_by_server.add(frame.stream_id)
                state.cond.notify_all()
        elif isinstance(frame, HeadersFrame):
            self.block = (frame.stream_id, bytearray(frame.data), "END_STREAM" in frame.flags)
            if "END_HEADERS" in frame.flags:
                self.end_block()
        elif isinstance(frame, ContinuationFrame):
            if self.block is None or self.block[0] != frame.stream_id:
                self.defects.append("a CONTINUATION outside a header block")
                return
            self.block[1].extend(frame.data)
            if "END_HEADERS" in frame.flags:
                self.end_block()
        elif isinstance(frame, DataFrame):
            self.on_data(frame)
        elif isinstance(frame, PushPromiseFrame):
            self.defects.append("PUSH_PROMISE, with SETTINGS_ENABLE_PUSH 0")
        elif isinstance(frame, ExtensionFrame):
            pass  # unknown types are ignored (RFC 9113 5.5)

    def on_data(self, frame: DataFrame) -> None:
        state = self.state
        sid = frame.stream_id
        result = self.stream(sid)
        if result is None:
            return
        flow = frame.flow_controlled_length
        self.received_conn += flow
        self.received[sid] = self.received.get(sid, 0) + flow
        if self.received_conn > state.granted_conn:
            self.defects.append("DATA over the connection's flow-control window")
        if self.received[sid] > self.case.initial_window + state.granted.get(sid, 0):
            result.defect = result.defect or "DATA over the stream's flow-control window"
        if result.status is None or result.ended:
            result.defect = result.defect or (
                "DATA before HEADERS" if result.status is None else "DATA after END_STREAM"
            )
        digest = self.hashes.setdefault(sid, hashlib.sha256())
        digest.update(frame.data)
        result.body_len += len(frame.data)
        result.body_sha = digest.hexdigest()[:16]
        if "END_STREAM" in frame.flags:
            self.ended(sid, result)
        self.replenish(sid, flow, result.ended)

    def replenish(self, sid: int, flow: int, ended: bool) -> None:
        """WINDOW_UPDATEs for what was read, when half a window is used."""
        state = self.state
        self.unacked_conn += flow
        self.unacked[sid] = self.unacked.get(sid, 0) + flow
        out = []
        if self.unacked_conn >= 32_768:
            out.append(WindowUpdateFrame(0, self.unacked_conn).serialize())
            with state.cond:
                state.granted_conn += self.unacked_conn
            self.unacked_conn = 0
        if not ended and self.unacked[sid] >= self.case.initial_window // 2:
            out.append(WindowUpdateFrame(sid, self.unacked[sid]).serialize())
            with state.cond:
                state.granted[sid] = state.granted.get(sid, 0) + self.unacked[sid]
            self.unacked[sid] = 0
        if out:
            with state.cond:
                state.reactive += out
                state.cond.notify_all()

    def end_block(self) -> None:
        assert self.block is not None
        sid, block, end_stream = self.block
        self.block = None
        try:
            fields = [
                (n.decode("latin-1"), v.decode("latin-1"))
                for n, v in self.decoder.decode(bytes(block), raw=True)
            ]
        except hpack.HPACKError as exc:
            self.defects.append(f"an HPACK block that does not decode: {exc}")
            return
        result = self.stream(sid)
        if result is None:
            return
        problem = _check_fields(fields, trailers=result.status is not None)
        if problem:
            result.defect = result.defect or problem
        if result.ended:
            result.defect = result.defect or "HEADERS after END_STREAM"
        elif result.status is None:
            status = dict(fields).get(":status", "0")
            code = int(status) if status.isdigit() else 0
            if 100 <= code < 200:
                result.interim.append(code)
                if end_stream:
                    result.defect = result.defect or "END_STREAM on an interim answer"
            else:
                result.status = code
                result.headers = [(n, v) for n, v in fields if not n.startswith(":")]
        else:
            result.trailers = fields
            if not end_stream:
                result.defect = result.defect or "trailers without END_STREAM"
        if end_stream:
            self.ended(sid, result)

    def ended(self, sid: int, result: StreamResult) -> None:
        result.ended = True
        length = result.header("content-length")
        i = self.by_sid[sid]
        head = self.case.requests[i].method == "HEAD" or result.status in (204, 304)
        if length is not None and not head and length.isdigit() and int(length) != result.body_len:
            result.defect = result.defect or f"content-length {length} but {result.body_len} body bytes"
        with self.state.cond:
            self.state.responded.add(sid)
            self.state.cond.notify_all()


def _check_fields(fields: list[tuple[str, str]], *, trailers: bool) -> str | None:
    """What is wrong with an answer's (or trailers') fields (RFC 9113 8.2, 8.3.2)."""
    seen_regular = False
    statuses = 0
    for name, value in fields:
        if name.startswith(":"):
            if trailers or seen_regular or name != ":status":
                return f"pseudo-header {name} misplaced"
            statuses += 1
            continue
        seen_regular = True
        if name != name.lower():
            return f"upper-case field name {name}"
        if name in CONNECTION_SPECIFIC:
            return f"connection-specific field {name}: {value}"
        if value != value.strip(" \t"):
            return f"field {name} with surrounding whitespace"
    if not trailers and statuses != 1:
        return "no :status"
    return None


def exchange_h2(port: int, case: H2Case, timeout: float) -> H2Exchange:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    state = State(case)
    reader = Reader(case, state)
    deadline = time.monotonic() + timeout
    errors: list[str] = []
    writer = threading.Thread(target=_write, args=(sock, case, state, deadline, errors), daemon=True)
    end = "timeout"
    with sock:
        writer.start()
        while True:
            if reader.end == "open" or (reader.end and reader.end.startswith("goaway") and state.closed):
                end = reader.end
                break
            with state.cond:
                finished = state.plan_done and all(state.done(s) for s in state.opened)
                if finished and not reader.ping_sent and not reader.end:
                    state.reactive.append(PingFrame(0, OPEN_CHECK).serialize())
                    state.cond.notify_all()
                    reader.ping_sent = True
            left = deadline - time.monotonic()
            if left <= 0:
                end = reader.end or "timeout"
                break
            # Short reads: the writer finishing its plan does not wake a blocked recv().
            sock.settimeout(min(left, RECV_POLL))
            try:
                data = sock.recv(READ_SIZE)
            except TimeoutError:
                if finished and reader.end:  # a GOAWAY, and the server keeps the socket open a while
                    end = reader.end
                    break
                continue
            except ConnectionResetError:
                end = reader.end or "reset"
                break
            if not data:
                end = reader.end or "eof"
                break
            reader.buf += data
            try:
                reader.feed()
            except (HyperframeError, ValueError) as exc:
                reader.defects.append(f"bytes that are no frame: {exc}")
                end = "garbage"
                break
        with state.cond:
            state.closed = True
            state.stop = True
            state.cond.notify_all()
        writer.join(max(0.0, deadline - time.monotonic()) + 1)
    return H2Exchange(reader.streams, end, state.goaway_last, reader.defects)
