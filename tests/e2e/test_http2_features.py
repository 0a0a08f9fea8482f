"""What a request gets over HTTP/1.1 it gets over HTTP/2, stream by stream: Server-Sent
Events, files, request ids, the access log, metrics, deadlines, overload shedding,
graceful drain, proxy headers and WebSockets (RFC 8441); then real clients: headless
Chromium over TLS and h2load, against a native app, a hosted ASGI app and a hosted
WSGI app. (tests/e2e/test_http2.py covers the protocol itself.)"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hpack
import httpx
import hyperframe.frame
import orjson
import pytest

import veter
from tests.polling import eventually

from .conftest import RunningServer
from .processes import Proc, children_of, wait_until, wait_workers_ready
from .test_access_log import TEXT as ACCESS_LINE
from .test_metrics import sample as metric
from .test_tls import cert  # noqa: F401  (the module's certificate fixture)
from .test_websocket_browser import CHROMIUM, FLAGS

Serve = Callable[..., RunningServer]
Fields = dict[str, str]


class AnyFields(dict[str, str]):
    """Equal to any header fields: for comparing (status, fields, body) on the rest."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict)


ANY_FIELDS = AnyFields()


class H2:
    """A blocking HTTP/2 client over the `h2` package: requests on streams of one
    connection, and the events the server sends, read as they come."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(1 << 24)  # the connection's window: large files
        self.events: list[h2.events.Event] = []
        self.settings_seen = False
        self.flush()

    def flush(self) -> None:
        if data := self.conn.data_to_send():
            self.sock.sendall(data)

    def request(
        self, path: str, method: str = "GET", headers: Fields | None = None, body: bytes | None = None,
        end: bool = True,
    ) -> int:  # fmt: skip
        """Opens a stream; its body (if any) ends it unless ``end`` is false."""
        stream: int = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":path", path), (":scheme", "http"), (":authority", "test")]
        fields += list((headers or {}).items())
        self.conn.send_headers(stream, fields, end_stream=end and body is None)
        if body is not None:
            self.conn.send_data(stream, body, end_stream=end)
        self.flush()
        return stream

    def pump(self, within: float | None = None) -> None:
        """One read from the socket (or none in ``within`` seconds): its events are
        queued, DATA is acknowledged."""
        self.sock.settimeout(within or 10)
        try:
            data = self.sock.recv(1 << 16)
        except TimeoutError:
            if within is None:
                raise
            return
        if not data:
            raise ConnectionError("the server closed the connection")
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            self.settings_seen |= isinstance(event, h2.events.RemoteSettingsChanged)
            self.events.append(event)
        self.flush()

    def next(self, stream: int | None) -> h2.events.Event:
        """The next event of ``stream`` (None: of the connection)."""
        while True:
            for event in self.events:
                if getattr(event, "stream_id", None) == stream:
                    self.events.remove(event)
                    return event
            self.pump()

    def head(self, stream: int) -> tuple[int, Fields]:
        while not isinstance(event := self.next(stream), h2.events.ResponseReceived):
            if isinstance(event, h2.events.StreamReset):
                raise ConnectionResetError(f"stream {stream} reset: {event.error_code!r}")
        fields = {k.decode(): v.decode() for k, v in event.headers or []}
        return int(fields.pop(":status")), fields

    def body(self, stream: int) -> bytes:
        body = b""
        while not isinstance(event := self.next(stream), h2.events.StreamEnded):
            if isinstance(event, h2.events.StreamReset):
                raise ConnectionResetError(f"stream {stream} reset: {event.error_code!r}")
            if isinstance(event, h2.events.DataReceived):
                body += event.data or b""
        return body

    def answer(self, stream: int) -> tuple[int, Fields, bytes]:
        status, fields = self.head(stream)
        return status, fields, self.body(stream)

    def get(self, path: str, headers: Fields | None = None) -> tuple[int, Fields, bytes]:
        return self.answer(self.request(path, headers=headers))

    def close(self) -> None:
        self.conn.close_connection()
        self.flush()
        self.sock.close()


@pytest.fixture
def h2c() -> Iterator[Callable[..., H2]]:
    """``h2c(port)``: a connection, closed after the test."""
    opened: list[H2] = []

    def connect(port: int, source: str = "127.0.0.1") -> H2:
        opened.append(H2(port, source))
        return opened[-1]

    yield connect
    for client in opened:
        client.sock.close()


# Server-Sent Events


def test_sse_events_arrive_one_by_one_before_the_stream_ends(serve: Serve, h2c: Callable[..., H2]) -> None:
    app = veter.App()
    go_on = asyncio.Event()

    @app.get("/events")
    async def events(request: veter.Request) -> veter.EventSourceResponse:
        async def source() -> AsyncIterator[object]:
            yield "one"
            await go_on.wait()  # the test lets the next events go once it has read the first
            yield veter.sse.Event("two", event="update", id="2")
            yield {"n": 3}

        return veter.EventSourceResponse(source())

    server = serve(app)
    client = h2c(server.port)
    stream = client.request("/events")
    status, fields = client.head(stream)
    assert (status, fields["content-type"], fields["cache-control"]) == (200, "text/event-stream", "no-cache")
    assert "transfer-encoding" not in fields and "content-length" not in fields
    first = client.next(stream)
    assert isinstance(first, h2.events.DataReceived) and first.data == b"data: one\n\n"
    assert server.loop is not None
    server.loop.call_soon_threadsafe(go_on.set)
    assert client.body(stream) == b'event: update\nid: 2\ndata: two\n\ndata: {"n":3}\n\n'


# Files


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("static")
    (where / "big.bin").write_bytes(os.urandom(5 << 20) + b"end")
    (where / "small.txt").write_text("small file\n")
    return where


def files_app(where: Path) -> veter.App:
    app = veter.App()
    app.static("/static", where)

    @app.get("/download")
    def download(request: veter.Request) -> veter.Response | veter.StreamingResponse:
        return veter.FileResponse(where / "big.bin", request, filename="big.bin")

    return app


def test_files_are_sent_exactly_on_their_stream(serve: Serve, files: Path) -> None:
    server = serve(files_app(files))
    big = (files / "big.bin").read_bytes()

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{server.port}", http1=False, http2=True, timeout=30
        ) as client:
            # Two large files and a small one at once, on one connection.
            return list(
                await asyncio.gather(
                    client.get("/static/big.bin"), client.get("/download"), client.get("/static/small.txt")
                )
            )

    static, download, small = asyncio.run(run())
    for r in (static, download):
        assert (r.http_version, r.status_code, int(r.headers["content-length"])) == ("HTTP/2", 200, len(big))
        assert hashlib.sha256(r.content).digest() == hashlib.sha256(big).digest()
    assert download.headers["content-disposition"] == 'attachment; filename="big.bin"'
    assert small.text == "small file\n" and small.headers["content-type"].startswith("text/plain")


def test_file_head_range_and_conditional_requests(serve: Serve, files: Path, h2c: Callable[..., H2]) -> None:
    server = serve(files_app(files))
    big = (files / "big.bin").read_bytes()
    client = h2c(server.port)
    status, fields, body = client.answer(client.request("/static/big.bin", method="HEAD"))
    assert (status, fields["content-length"], body) == (200, str(len(big)), b"")
    status, fields, body = client.get("/static/big.bin", {"range": "bytes=1000-1999"})
    assert (status, fields["content-range"], body) == (206, f"bytes 1000-1999/{len(big)}", big[1000:2000])
    status, fields, body = client.get("/static/big.bin", {"range": "bytes=-3"})
    assert (status, body) == (206, b"end")
    status, _, _ = client.get("/static/big.bin", {"range": f"bytes={len(big)}-"})
    assert status == 416
    status, _, body = client.get("/static/big.bin", {"if-none-match": fields["etag"]})
    assert (status, body) == (304, b"")
    assert client.get("/static/small.txt")[2] == b"small file\n"  # the connection still serves


# Request ids, the access log, metrics


def ids_app() -> veter.App:
    app = veter.App()

    @app.route("/id", methods=["GET", "POST", "HEAD"])
    async def request_id(request: veter.Request) -> str:
        await request.body()
        return str(request.id)

    return app


def test_each_stream_has_its_request_id(serve: Serve, h2c: Callable[..., H2]) -> None:
    server = serve(ids_app())
    client = h2c(server.port)
    given = client.request("/id", headers={"x-request-id": "edge-id-1"})
    bad = client.request("/id", headers={"x-request-id": "not an id"})
    new = [client.request("/id") for _ in range(3)]
    answers = {stream: client.answer(stream) for stream in [given, bad, *new]}
    for status, fields, body in answers.values():
        assert status == 200 and fields["x-request-id"] == body.decode()
    assert answers[given][2] == b"edge-id-1"
    made = [answers[stream][2].decode() for stream in [bad, *new]]
    assert all(re.fullmatch(r"[0-9a-f]{32}", rid) for rid in made) and len(set(made)) == 4, made


def test_access_log_has_one_line_per_stream(serve: Serve, h2c: Callable[..., H2], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    server = serve(ids_app(), access_log=str(path))
    client = h2c(server.port)
    streams = [
        client.request("/id", headers={"x-request-id": "rid-get"}),
        client.request("/id?q=1", method="POST", headers={"x-request-id": "rid-post"}, body=b"x" * 1000),
        client.request("/id", method="HEAD", headers={"x-request-id": "rid-head"}),
        client.request("/missing", headers={"x-request-id": "rid-404"}),
    ]
    for stream in streams:
        client.answer(stream)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as http1:
        assert http1.get("/id", headers={"x-request-id": "rid-http1"}).status_code == 200
    server.stop()
    lines = {m["rid"]: m for m in map(ACCESS_LINE.match, path.read_text().splitlines()) if m}
    assert sorted(lines) == ["rid-404", "rid-get", "rid-head", "rid-http1", "rid-post"]
    assert [lines[r]["version"] for r in ("rid-get", "rid-post", "rid-head", "rid-404")] == ["HTTP/2.0"] * 4
    assert lines["rid-http1"]["version"] == "HTTP/1.1"
    seen = {r: (m["method"], m["target"], m["status"], m["bytes"], m["client"]) for r, m in lines.items()}
    assert seen["rid-get"] == ("GET", "/id", "200", "7", "127.0.0.1")
    assert seen["rid-post"] == ("POST", "/id?q=1", "200", "8", "127.0.0.1")
    assert seen["rid-head"] == ("HEAD", "/id", "200", "0", "127.0.0.1")
    assert seen["rid-404"][:3] == ("GET", "/missing", "404")


def test_metrics_count_streams(serve: Serve, h2c: Callable[..., H2]) -> None:
    server = serve(ids_app(), metrics_path="/metrics")
    client = h2c(server.port)
    for stream in [client.request("/id") for _ in range(5)] + [client.request("/missing")]:
        client.answer(stream)
    status, fields, body = client.get("/metrics")
    assert status == 200 and fields["content-type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    assert metric(text, 'veter_requests_total{route="/id",status="200"}') == 5
    assert metric(text, 'veter_requests_total{route="(unmatched)",status="404"}') == 1
    assert metric(text, 'veter_request_duration_seconds_bucket{route="/id",le="+Inf"}') == 5


# Deadlines, timeouts and overload


def slow_app(cancelled: list[str]) -> veter.App:
    app = veter.App()

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    @app.get("/sleep")
    async def sleep(request: veter.Request) -> str:
        try:
            await asyncio.sleep(float(request.query["s"]))
        except asyncio.CancelledError:
            cancelled.append(request.path)
            raise
        return "slept"

    @app.post("/upload")
    async def upload(request: veter.Request) -> str:
        return str(len(await request.body()))

    return app


def test_request_timeout_answers_504_on_its_stream_alone(serve: Serve, h2c: Callable[..., H2]) -> None:
    cancelled: list[str] = []
    server = serve(slow_app(cancelled), request_timeout=0.5)
    client = h2c(server.port)
    started = time.monotonic()
    late = client.request("/sleep?s=5")
    for stream in [client.request("/"), client.request("/sleep?s=0.01"), client.request("/")]:
        assert client.answer(stream)[0] == 200
    assert not any(getattr(e, "stream_id", None) == late for e in client.events), (
        "the late stream was answered"
    )
    status, fields, body = client.answer(late)
    assert (status, body) == (504, b"handler deadline exceeded") and "x-request-id" in fields
    assert 0.45 < time.monotonic() - started < 1.5
    # The 504 is written first; the handler's task is cancelled on the server's
    # loop after it, so its CancelledError may come a moment later.
    asyncio.run(eventually(lambda: cancelled == ["/sleep"], within=5, what="the late handler cancelled"))
    assert client.get("/sleep?s=0.01")[2] == b"slept"  # the connection serves on


def test_body_timeout_ends_the_stalled_stream_alone(serve: Serve, h2c: Callable[..., H2]) -> None:
    server = serve(slow_app([]), body_timeout=0.5)
    client = h2c(server.port)
    started = time.monotonic()
    stalled = client.request("/upload", "POST", {"content-length": "10"}, b"abc", end=False)
    assert client.get("/") == (200, ANY_FIELDS, b"ok")
    # Another stream's body comes a byte every 0.1 s meanwhile: it is not timed out.
    flowing = client.request("/upload", "POST", {"content-length": "100"}, b"", end=False)
    sent = 0
    while not any(
        isinstance(e, h2.events.ResponseReceived) and e.stream_id == stalled for e in client.events
    ):
        assert sent < 50, "the stalled stream was not answered"
        client.conn.send_data(flowing, b"x")
        client.flush()
        sent += 1
        client.pump(within=0.1)
    status, _ = client.head(stalled)
    assert status == 408 and 0.4 < time.monotonic() - started < 1.5
    client.conn.send_data(flowing, b"x" * (100 - sent), end_stream=True)
    client.flush()
    assert client.answer(flowing)[::2] == (200, b"100")


def test_streams_past_capacity_are_shed_with_503(serve: Serve, h2c: Callable[..., H2]) -> None:
    # One handler at a time: the second and third streams would wait for the first's
    # 200 ms, past the 20 ms queue timeout.
    server = serve(slow_app([]), max_concurrency=1, queue_timeout=0.02)
    client = h2c(server.port)
    streams = [client.request("/sleep?s=0.2") for _ in range(3)]
    answers = [client.answer(stream) for stream in streams]
    assert [status for status, _, _ in answers] == [200, 503, 503]
    assert [(f["retry-after"], body) for _, f, body in answers[1:]] == [
        ("1", b"Service Unavailable: overloaded")
    ] * 2
    assert client.get("/") == (200, ANY_FIELDS, b"ok")  # the connection serves on


def test_max_concurrency_holds_streams_until_a_slot_frees(serve: Serve, h2c: Callable[..., H2]) -> None:
    app = veter.App()
    release = asyncio.Event()
    running: list[int] = []

    @app.get("/hold/{n:int}")
    async def hold(request: veter.Request, n: int) -> str:
        running.append(n)
        await release.wait()
        return f"done {n}"

    server = serve(app, max_concurrency=2)
    client = h2c(server.port)
    streams = [client.request(f"/hold/{n}") for n in range(5)]
    asyncio.run(eventually(lambda: len(running) == 2, what="two handlers running"))
    assert server.server is not None and server.server.dispatcher is not None
    assert server.server.dispatcher.in_flight == 2
    client.conn.ping(b"12345678")  # the server has read everything before it answers the ping
    client.flush()
    while not any(isinstance(e, h2.events.PingAckReceived) for e in client.events):
        client.pump()
    assert len(running) == 2, running
    assert server.loop is not None
    server.loop.call_soon_threadsafe(release.set)
    assert [client.answer(stream)[2] for stream in streams] == [f"done {n}".encode() for n in range(5)]
    assert sorted(running) == list(range(5))


# Proxy headers


def test_proxy_headers_from_the_trusted_proxy_are_believed(
    serve: Serve, h2c: Callable[..., H2], tmp_path: Path
) -> None:
    app = veter.App()

    @app.get("/who")
    def who(request: veter.Request) -> dict[str, str]:
        return {"client": request.client[0], "scheme": request.scheme, "host": request.host}

    log = tmp_path / "access.log"
    server = serve(app, proxy_headers=True, access_log=str(log))
    forged = {"x-forwarded-for": "6.6.6.6", "x-forwarded-proto": "https", "x-forwarded-host": "shop.example"}
    trusted = h2c(server.port).get("/who", forged)
    untrusted = h2c(server.port, "127.0.0.2").get("/who", forged)
    assert orjson.loads(trusted[2]) == {"client": "6.6.6.6", "scheme": "https", "host": "shop.example"}
    assert orjson.loads(untrusted[2]) == {"client": "127.0.0.2", "scheme": "http", "host": "test"}
    server.stop()
    clients = [m["client"] for m in map(ACCESS_LINE.match, log.read_text().splitlines()) if m]
    assert sorted(clients) == ["127.0.0.2", "6.6.6.6"]


# Graceful drain, in a process of its own


class Wire:
    """HTTP/2 frame by frame (hyperframe and hpack), for what the `h2` package will
    not do: it reads nothing more once a GOAWAY came, and opens no stream after it."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        self.buffer = b""
        self.next_stream = 1
        self.goaway: hyperframe.frame.GoAwayFrame | None = None
        # Sent with the first request: a draining server's GOAWAY could come between.
        self.unsent = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + hyperframe.frame.SettingsFrame(0).serialize()

    def send(self, data: bytes) -> None:
        self.sock.sendall(self.unsent + data)
        self.unsent = b""

    def request(self, path: str, method: str = "GET", body: bytes | None = None) -> int:
        stream, self.next_stream = self.next_stream, self.next_stream + 2
        fields = [(":method", method), (":path", path), (":scheme", "http"), (":authority", "test")]
        headers = hyperframe.frame.HeadersFrame(stream, self.encoder.encode(fields), flags=["END_HEADERS"])
        out = headers.serialize()
        if body is None:
            headers.flags.add("END_STREAM")
            out = headers.serialize()
        else:
            out += hyperframe.frame.DataFrame(stream, body, flags=["END_STREAM"]).serialize()
        self.send(out)
        return stream

    def frame(self) -> hyperframe.frame.Frame | None:
        """The next frame (a HEADERS frame's block decoded into ``fields``); None once
        the server closed the connection. SETTINGS are acknowledged, GOAWAY kept."""
        while True:
            if len(self.buffer) >= 9:
                frame, length = hyperframe.frame.Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) >= 9 + length:
                    frame.parse_body(memoryview(self.buffer[9 : 9 + length]))
                    self.buffer = self.buffer[9 + length :]
                    if isinstance(frame, hyperframe.frame.SettingsFrame) and "ACK" not in frame.flags:
                        self.send(hyperframe.frame.SettingsFrame(0, flags=["ACK"]).serialize())
                    if isinstance(frame, hyperframe.frame.HeadersFrame):
                        frame.fields = dict(self.decoder.decode(frame.data))  # type: ignore[attr-defined]
                    if isinstance(frame, hyperframe.frame.GoAwayFrame):
                        self.goaway = frame
                    return frame
            data = self.sock.recv(1 << 16)
            if not data:
                return None
            self.buffer += data

    def answer(self, stream: int) -> tuple[int, bytes]:
        """The status and body of ``stream``; other streams' frames are dropped."""
        status, body = 0, b""
        while (frame := self.frame()) is not None:
            if frame.stream_id != stream:
                continue
            assert not isinstance(frame, hyperframe.frame.RstStreamFrame), f"stream {stream} reset"
            if isinstance(frame, hyperframe.frame.HeadersFrame):
                status = int(frame.fields[":status"])  # type: ignore[attr-defined]
            elif isinstance(frame, hyperframe.frame.DataFrame):
                body += frame.data
            if "END_STREAM" in frame.flags:
                return status, body
        raise ConnectionError(f"the server closed the connection before stream {stream} ended")


@pytest.fixture
def wire() -> Iterator[Callable[[int], Wire]]:
    """``wire(port)``: a connection, closed after the test."""
    opened: list[Wire] = []

    def connect(port: int) -> Wire:
        opened.append(Wire(port))
        return opened[-1]

    yield connect
    for client in opened:
        client.sock.close()


NATIVE = "tests.e2e.apps.h2_features:app"


@pytest.fixture
def process() -> Iterator[Callable[..., Proc]]:
    """``process(target, *args)``: ``veter run target`` with one worker, ready; what
    is left of it is killed afterwards."""
    procs: list[Proc] = []

    def start(target: str, *args: str) -> Proc:
        procs.append(Proc(["run", target, "--port", "0", "--workers", "1", "--access-log", "off", *args]))
        procs[-1].wait_ready()
        wait_workers_ready(procs[-1], 1)
        return procs[-1]

    yield start
    for proc in procs:
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


def test_sigterm_sends_goaway_and_answers_the_stream_in_flight(
    process: Callable[..., Proc], wire: Callable[[int], Wire], tmp_path: Path
) -> None:
    proc = process(NATIVE)
    assert proc.port is not None
    mark, release = tmp_path / "running", tmp_path / "release"
    client = wire(proc.port)
    held = client.request(f"/held?mark={mark}&release={release}")
    wait_until(mark.exists, 10)
    os.kill(proc.pid, signal.SIGTERM)
    frames = []
    while client.goaway is None:
        frames.append(client.frame())
        assert frames[-1] is not None, "closed without a GOAWAY"
    assert not [f for f in frames if f is not None and f.stream_id == held], "answered before its release"
    assert (client.goaway.error_code, client.goaway.last_stream_id >= held) == (0, True)
    refused = client.request("/")  # past the GOAWAY: not served
    client.send(hyperframe.frame.PingFrame(0, b"drained!").serialize())
    while not isinstance(client.frame(), hyperframe.frame.PingFrame):  # the new stream was read
        pass
    release.touch()
    assert client.answer(held) == (200, b"released")
    rest = []
    while (frame := client.frame()) is not None:
        rest.append(frame)
    assert not [
        f for f in rest if f.stream_id == refused and not isinstance(f, hyperframe.frame.RstStreamFrame)
    ]
    assert proc.proc.wait(30) == 0


def test_streams_are_served_through_the_drain_delay(
    process: Callable[..., Proc], wire: Callable[[int], Wire]
) -> None:
    proc = process(NATIVE, "--drain-delay", "1.5")
    assert proc.port is not None
    kept = wire(proc.port)
    assert kept.answer(kept.request("/")) == (200, b"hello")
    mark = proc.mark()
    began = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait_for(r"leaving: /readyz answers 503", start=mark)
    # As an HTTP/1.1 keep-alive connection is closed after its next answer, an HTTP/2
    # one is told to go (GOAWAY, no error); new connections are served meanwhile.
    while kept.goaway is None:
        assert kept.frame() is not None, "closed without a GOAWAY"
    assert (kept.goaway.error_code, kept.goaway.last_stream_id) == (0, 1)
    for _ in range(3):
        for path, method, body, answer in [
            ("/readyz", "GET", None, 503),
            ("/", "GET", None, 200),
            ("/echo", "POST", b"during the delay", 200),
        ]:
            fresh = wire(proc.port)
            assert fresh.answer(fresh.request(path, method, body))[0] == answer
    assert time.monotonic() - began < 1.5, "the checks ran inside the delay"
    assert proc.proc.wait(30) == 0
    assert time.monotonic() - began >= 1.5


# WebSockets over HTTP/2 (RFC 8441)

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def ws_frame(opcode: int, payload: bytes) -> bytes:
    """A client's frame: final, masked (RFC 6455 5.2)."""
    size = len(payload)
    if size < 126:
        length = bytes([0x80 | size])
    elif size < 1 << 16:
        length = bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        length = bytes([0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    return bytes([0x80 | opcode]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class WebSocketStream:
    """A WebSocket on a stream of ``client`` opened by extended CONNECT."""

    def __init__(self, client: H2, path: str, headers: Fields | None = None) -> None:
        while not client.settings_seen:
            client.pump()
        assert client.conn.remote_settings.enable_connect_protocol == 1
        self.client, self.stream, self.buffer = client, client.conn.get_next_available_stream_id(), b""
        fields = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"), (":path", path),
                  (":authority", "test"), ("sec-websocket-version", "13"), *(headers or {}).items()]  # fmt: skip
        client.conn.send_headers(self.stream, fields)
        client.flush()
        self.status, self.fields = client.head(self.stream)

    def send(self, opcode: int, payload: bytes) -> None:
        frame = ws_frame(opcode, payload)
        for at in range(0, len(frame), 16384):  # the largest HTTP/2 frame by default
            self.client.conn.send_data(self.stream, frame[at : at + 16384])
        self.client.flush()

    def receive(self) -> tuple[int, bytes]:
        """The server's next WebSocket frame (unmasked, final)."""
        while True:
            if len(self.buffer) >= 2:
                assert self.buffer[0] & 0x80 and not self.buffer[1] & 0x80, self.buffer[:2]
                size, at = self.buffer[1] & 0x7F, 2
                if size >= 126:
                    at = 4 if size == 126 else 10
                    size = int.from_bytes(self.buffer[2:at], "big")
                if len(self.buffer) >= at + size:
                    opcode, payload = self.buffer[0] & 0x0F, self.buffer[at : at + size]
                    self.buffer = self.buffer[at + size :]
                    return opcode, payload
            event = self.client.next(self.stream)
            if isinstance(event, h2.events.DataReceived):
                self.buffer += event.data or b""
            elif not isinstance(event, h2.events.WindowUpdated):
                raise AssertionError(f"a WebSocket frame expected, got {event}")

    def close(self) -> tuple[int, bytes]:
        """The close handshake: ours, the server's close, the end of its side, then ours."""
        self.send(CLOSE, (1000).to_bytes(2, "big") + b"done")
        opcode, payload = self.receive()
        while not isinstance(event := self.client.next(self.stream), h2.events.StreamEnded):
            empty = isinstance(event, h2.events.DataReceived) and event.data == b""
            assert empty or isinstance(event, h2.events.WindowUpdated), event
        try:
            self.client.conn.end_stream(self.stream)
        except h2.exceptions.StreamClosedError:
            # The server may tell us to stop sending (RFC 9113 8.1), but with no error.
            reset = self.client.next(self.stream)
            assert isinstance(reset, h2.events.StreamReset) and reset.error_code == 0, reset
        self.client.flush()
        return opcode, payload


def test_websocket_over_h2_to_a_native_route(serve: Serve, h2c: Callable[..., H2]) -> None:
    app = veter.App()
    seen: list[object] = []

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    @app.websocket("/echo")
    async def echo(ws: veter.WebSocket) -> None:
        await ws.accept()
        async for message in ws:
            await ws.send(message)
        seen.append(ws.close_code)

    server = serve(app)
    client = h2c(server.port)
    ws = WebSocketStream(client, "/echo")
    assert ws.status == 200 and "sec-websocket-accept" not in ws.fields and "upgrade" not in ws.fields
    ws.send(TEXT, "héllo over h2".encode())
    assert ws.receive() == (TEXT, "héllo over h2".encode())
    big = os.urandom(100_000)
    ws.send(BINARY, big)
    assert ws.receive() == (BINARY, big)
    ws.send(PING, b"are you there")
    assert ws.receive() == (PONG, b"are you there")
    assert client.get("/") == (200, ANY_FIELDS, b"ok")  # another stream meanwhile
    opcode, payload = ws.close()
    assert (opcode, payload[:2]) == (CLOSE, (1000).to_bytes(2, "big"))
    asyncio.run(eventually(lambda: seen == [1000], what="the handler saw the close"))
    asyncio.run(eventually(lambda: not app.websockets, within=3, what="the WebSocket's task ended"))
    assert client.get("/") == (200, ANY_FIELDS, b"ok")  # the connection serves on


def test_websocket_over_h2_to_a_hosted_asgi_app(process: Callable[..., Proc], h2c: Callable[..., H2]) -> None:
    proc = process("tests.hosted.apps.ws_raw:app")
    client = h2c(proc.port)
    ws = WebSocketStream(client, "/echo", {"sec-websocket-protocol": "chat, other"})
    assert (ws.status, ws.fields["sec-websocket-protocol"], ws.fields["x-accepted"]) == (200, "chat", "yes")
    ws.send(TEXT, b"hello")
    assert ws.receive() == (TEXT, b"echo hello")
    ws.send(BINARY, bytes(range(256)) * 100)
    assert ws.receive() == (BINARY, bytes(range(256))[::-1] * 100)
    ws.send(PING, b"ping")
    assert ws.receive() == (PONG, b"ping")
    opcode, payload = ws.close()
    assert (opcode, payload[:2]) == (CLOSE, (1000).to_bytes(2, "big"))
    # The app saw the close; its send after it raised.
    assert orjson.loads(client.get("/events")[2])[-2:] == [
        ["disconnect", 1000, "done"],
        ["send after close", "WebSocketClosed"],
    ]
    reset = WebSocketStream(client, "/echo")
    client.conn.reset_stream(reset.stream, h2.errors.ErrorCodes.CANCEL)
    client.flush()
    wait_until(lambda: ["disconnect", 1006, ""] in orjson.loads(client.get("/events")[2]), 3)


def test_a_websocket_handler_learns_its_stream_or_connection_is_gone(
    serve: Serve, h2c: Callable[..., H2]
) -> None:
    app = veter.App()
    seen: list[int | None] = []

    @app.websocket("/echo")
    async def echo(ws: veter.WebSocket) -> None:
        await ws.accept()
        async for message in ws:
            await ws.send(message)
        seen.append(ws.close_code)

    server = serve(app)
    client = h2c(server.port)
    reset, dropped = WebSocketStream(client, "/echo"), WebSocketStream(client, "/echo")
    for ws in (reset, dropped):
        assert ws.status == 200
        ws.send(TEXT, b"here")
        assert ws.receive() == (TEXT, b"here")
    client.conn.reset_stream(reset.stream, h2.errors.ErrorCodes.CANCEL)
    client.flush()
    asyncio.run(eventually(lambda: seen == [1006], within=3, what="the reset stream's handler ended"))
    client.sock.close()  # as HTTP/1.1's handlers learn their client is gone, with 1006
    asyncio.run(eventually(lambda: seen == [1006, 1006], within=3, what="the dropped stream's handler ended"))
    assert not app.websockets


# Real clients: headless Chromium over TLS, h2load

FRONT_ENDS = {
    "native": NATIVE,
    "asgi": "tests.e2e.apps.h2_features:asgi",
    "wsgi": "tests.e2e.apps.h2_features:wsgi",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_chromium_fetches_in_parallel_over_h2(
    process: Callable[..., Proc],
    cert: tuple[Path, Path],  # noqa: F811
    front_end: str,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    assert shutil.which(CHROMIUM), "Chromium is needed (scripts/install-services.sh installs it)"
    proc = process(FRONT_ENDS[front_end], "--ssl-certfile", str(cert[0]), "--ssl-keyfile", str(cert[1]))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_context(ignore_https_errors=True).new_page()
            page.goto(f"https://127.0.0.1:{proc.port}/page")
            page.wait_for_function("window.result !== undefined", timeout=30_000)
            result = page.evaluate("window.result")
        finally:
            browser.close()
    assert "error" not in result, result
    assert [answer["i"] for answer in result["answers"]] == list(range(20))
    assert (result["page"], result["protocols"]) == ("h2", ["h2"] * 20)


LINE = b"%063d\n" % 0
H2LOAD_TARGETS = {  # front end: the app, and per method its path and its answer's size
    "native": (NATIVE, {"GET": ("/", len(b"hello")), "POST": ("/echo", 256 * len(LINE))}),
    "asgi": (
        "tests.hosted.apps.raw:app",
        {"GET": ("/", len(b"Hello, world!")), "POST": ("/echo", 256 * len(LINE))},
    ),
    "wsgi": (  # /echo answers the lines it read as a JSON list
        "tests.hosted.apps.wsgi_raw:app",
        {
            "GET": ("/write", len(b"written then returned")),
            "POST": ("/echo", len(json.dumps([LINE.decode()] * 256))),
        },
    ),
}


@pytest.mark.timeout(180)
@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load (nghttp2-client) is not installed")
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("front_end", H2LOAD_TARGETS)
def test_h2load(process: Callable[..., Proc], tmp_path: Path, front_end: str, method: str) -> None:
    target, paths = H2LOAD_TARGETS[front_end]
    path, size = paths[method]
    proc = process(target)
    command = ["h2load", "-n", "2000", "-c", "4", "-m", "16", f"http://127.0.0.1:{proc.port}{path}"]
    if method == "POST":
        (tmp_path / "body").write_bytes(LINE * 256)  # 16 KiB
        command += ["-d", str(tmp_path / "body")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=150).stdout
    assert "Application protocol: h2c" in out, out
    requests = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                         r"(\d+) errored, (\d+) timeout$", out, re.MULTILINE)  # fmt: skip
    statuses = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx$", out, re.MULTILINE)
    data = re.search(r"^traffic: .* \((\d+)\) data$", out, re.MULTILINE)
    assert requests and statuses and data, out
    assert requests.groups() == ("2000", "2000", "2000", "2000", "0", "0", "0"), out
    assert statuses.groups() == ("2000", "0", "0", "0"), out
    assert int(data.group(1)) == 2000 * size, out
