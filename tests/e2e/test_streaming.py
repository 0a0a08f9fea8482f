"""Streamed responses over real sockets: framing, order behind pipelining, HEAD,
backpressure (a client that does not read pauses the generator), the generator
closed when the client goes away, and the write timeout."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

import veter

from .conftest import RunningServer, read_responses, wait_closed
from .processes import Proc

Serve = Callable[..., RunningServer]


class Probe:
    """What a generator did, seen from the test thread."""

    def __init__(self) -> None:
        self.produced = 0
        self.closed = threading.Event()
        self.started = threading.Event()


def wait_until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def make_app(probe: Probe) -> veter.App:
    app = veter.App()

    @app.get("/count/{n:int}")
    async def count(request: veter.Request, n: int) -> veter.StreamingResponse:
        async def body() -> AsyncIterator[str]:
            try:
                probe.started.set()
                for i in range(n):
                    await asyncio.sleep(0)
                    yield f"{i}\n"
            finally:
                probe.closed.set()

        return veter.StreamingResponse(body(), content_type="text/plain")

    @app.get("/sync")
    def sync(request: veter.Request) -> veter.StreamingResponse:
        return veter.StreamingResponse(iter([b"a", "b", b"", b"c"]), headers={"X-Kind": "sync"})

    @app.get("/sized")
    async def sized(request: veter.Request) -> veter.StreamingResponse:
        return veter.StreamingResponse(iter([b"abc", b"de"]), content_length=5)

    @app.get("/short")
    async def short(request: veter.Request) -> veter.StreamingResponse:
        return veter.StreamingResponse(iter([b"abc"]), content_length=5)

    @app.get("/busy-pieces")
    def busy_pieces(request: veter.Request) -> veter.StreamingResponse:
        # Each piece takes a moment of work (without awaiting), so a client that
        # reads keeps the transport's buffer empty: writing never pauses.
        def body() -> Iterator[bytes]:
            piece = b"s" * 512
            try:
                probe.started.set()
                while True:
                    time.sleep(0.0005)
                    probe.produced += len(piece)
                    yield piece
            finally:
                probe.closed.set()

        return veter.StreamingResponse(body())

    @app.get("/endless")
    async def endless(request: veter.Request) -> veter.StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            piece = b"y" * 65536
            try:
                probe.started.set()
                while True:
                    probe.produced += len(piece)
                    yield piece
            finally:
                probe.closed.set()

        return veter.StreamingResponse(body())

    @app.get("/idle")
    async def idle(request: veter.Request) -> veter.StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            try:
                yield b"first"
                probe.started.set()
                await asyncio.sleep(3600)
                yield b"never"
            finally:
                probe.closed.set()

        return veter.StreamingResponse(body())

    @app.get("/fails")
    async def fails(request: veter.Request) -> veter.StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b"partial"
            raise RuntimeError("generator failed")

        return veter.StreamingResponse(body())

    @app.get("/plain")
    def plain(request: veter.Request) -> str:
        return "plain"

    return app


def test_chunked_body_and_pipelined_order(serve: Serve) -> None:
    server = serve(make_app(Probe()))
    with server.connect() as sock:
        sock.sendall(
            b"GET /count/500 HTTP/1.1\r\nHost: t\r\n\r\n"
            b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n"
            b"GET /sync HTTP/1.1\r\nHost: t\r\n\r\n"
            b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        (streamed, plain, synced, again), closed = read_responses(sock, 4)
    assert streamed.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in streamed.headers
    assert streamed.headers["content-type"] == "text/plain"
    assert streamed.content == "".join(f"{i}\n" for i in range(500)).encode()
    assert plain.content == b"plain" == again.content
    assert synced.content == b"abc" and synced.headers["x-kind"] == "sync"
    assert not closed


def test_streams_carry_the_request_id_and_are_logged_when_they_end(serve: Serve, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    server = serve(make_app(Probe()), access_log=str(log))
    with server.connect() as sock:
        sock.sendall(
            b"GET /count/100 HTTP/1.1\r\nHost: t\r\nX-Request-ID: s-1\r\n\r\n"
            b"GET /fails HTTP/1.1\r\nHost: t\r\nX-Request-ID: s-2\r\n\r\n"
        )
        (streamed,), _ = read_responses(sock, 1)
        wait_closed(sock)  # the failing stream cuts its response and the connection
    assert streamed.headers["x-request-id"] == "s-1"
    server.stop()
    lines = sorted(log.read_text().splitlines(), key=lambda line: line.split()[-1])
    body = "".join(f"{i}\n" for i in range(100)).encode()
    assert lines[0].endswith(f'"GET /count/100 HTTP/1.1" 200 {len(body)} {lines[0].split()[-2]} s-1')
    assert lines[1].split()[-4:-2] == ["200", str(len(b"partial"))] and lines[1].endswith(" s-2")


def test_content_length_when_given(serve: Serve) -> None:
    server = serve(make_app(Probe()))
    with server.connect() as sock:
        sock.sendall(b"GET /sized HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
        (sized, plain), closed = read_responses(sock, 2)
    assert sized.headers["content-length"] == "5" and "transfer-encoding" not in sized.headers
    assert sized.content == b"abcde" and plain.content == b"plain" and not closed


def test_body_shorter_than_content_length_closes(serve: Serve) -> None:
    server = serve(make_app(Probe()))
    with server.connect() as sock:
        sock.sendall(b"GET /short HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
        data = wait_closed(sock)
    assert data.endswith(b"\r\n\r\nabc")  # cut short: the pipelined request is not answered
    assert b"plain" not in data


def test_head_sends_headers_only_and_closes_the_generator(serve: Serve) -> None:
    probe = Probe()
    server = serve(make_app(probe))
    with server.connect() as sock:
        sock.sendall(b"HEAD /count/5 HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
        (head, plain), closed = read_responses(sock, 2, head=[True, False])
    assert head.headers["transfer-encoding"] == "chunked" and head.content == b""
    assert plain.content == b"plain" and not closed
    assert not probe.started.is_set()  # never iterated


def test_http10_body_ends_with_the_connection(serve: Serve) -> None:
    server = serve(make_app(Probe()))
    with server.connect() as sock:
        sock.sendall(b"GET /count/3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        data = wait_closed(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding" not in head and b"Connection: close" in head
    assert body == b"0\n1\n2\n"


def test_generator_failure_cuts_the_response(serve: Serve) -> None:
    server = serve(make_app(Probe()))
    with server.connect() as sock:
        sock.sendall(b"GET /fails HTTP/1.1\r\nHost: t\r\n\r\n")
        data = wait_closed(sock)
    assert b"7\r\npartial\r\n" in data
    assert not data.endswith(b"0\r\n\r\n")  # no last chunk: the client sees it incomplete


def test_generator_closed_when_the_client_goes_away(serve: Serve) -> None:
    probe = Probe()
    server = serve(make_app(probe))
    sock = server.connect()
    sock.sendall(b"GET /idle HTTP/1.1\r\nHost: t\r\n\r\n")
    assert probe.started.wait(10)
    sock.close()
    assert probe.closed.wait(10), "generator not closed after the client left"


def test_slow_client_pauses_the_generator(serve: Serve) -> None:
    probe = Probe()
    server = serve(make_app(probe))
    with server.connect() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
        assert probe.started.wait(10)
        # Without backpressure the generator would produce gigabytes in this time.
        time.sleep(1.0)
        paused_at = probe.produced
        assert paused_at < 16 * 1024 * 1024, f"generator ran ahead: {paused_at} bytes"
        # Reading lets it go on.
        sock.settimeout(10)
        got = 0
        while got < paused_at + 4 * 1024 * 1024:
            chunk = sock.recv(1 << 20)
            assert chunk
            got += len(chunk)
        assert probe.produced > paused_at
    assert probe.closed.wait(10)


def test_a_reader_that_leaves_mid_stream_closes_a_generator_that_never_awaits(
    serve: Serve,
) -> None:
    # The generator never awaits and the client keeps up, so writing never pauses:
    # the pump itself must notice the closed transport (and let the loop turn).
    probe = Probe()
    server = serve(make_app(probe))
    for target in ["/endless", "/busy-pieces"] * 10:
        probe.closed.clear()
        with server.connect() as sock:
            # Leave with a reset, as a killed client does.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            sock.settimeout(10)
            got = 0
            while got < 64 * 1024:
                chunk = sock.recv(1 << 20)
                assert chunk
                got += len(chunk)
        assert probe.closed.wait(10), "generator not closed after the reader left"
    # The loop is still serving.
    with server.connect() as sock:
        sock.sendall(b"GET /sized HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert read_responses(sock, 1)[0][0].content == b"abcde"


def test_a_stream_that_never_awaits_does_not_starve_other_connections(serve: Serve) -> None:
    probe = Probe()
    server = serve(make_app(probe))
    with server.connect() as streaming:
        streaming.sendall(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
        streaming.settimeout(10)
        assert probe.started.wait(10)
        stop = threading.Event()

        def drain() -> None:
            while not stop.is_set():
                try:
                    if not streaming.recv(1 << 20):
                        return
                except OSError:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            started = time.monotonic()
            with server.connect() as other:
                other.sendall(b"GET /sized HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                other.settimeout(10)
                assert read_responses(other, 1)[0][0].content == b"abcde"
            assert time.monotonic() - started < 2.0
        finally:
            stop.set()
            streaming.shutdown(socket.SHUT_RDWR)  # the reader's recv returns
            reader.join(10)
    assert probe.closed.wait(10)


def test_write_timeout_applies_to_a_stream(serve: Serve) -> None:
    probe = Probe()
    server = serve(make_app(probe), write_timeout=0.5)
    with server.connect() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
        # The client never reads: the server drops it and closes the generator.
        assert probe.closed.wait(20), "stream to a stuck client was not timed out"


def test_middleware_sees_a_streaming_response(serve: Serve) -> None:
    app = make_app(Probe())

    @app.middleware
    async def tag(request: veter.Request, call_next: Callable[..., object]) -> object:
        response = await call_next(request)  # type: ignore[misc]
        response.set_header("X-Mw", "1")  # type: ignore[attr-defined]
        return response

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"GET /count/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
    assert resp.headers["x-mw"] == "1" and resp.content == b"0\n1\n"


def test_bad_streaming_arguments() -> None:
    with pytest.raises(TypeError):
        veter.StreamingResponse(b"not an iterable of pieces")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="content_length"):
        veter.StreamingResponse(iter([]), content_length=-1)
    with pytest.raises(ValueError, match="status"):
        veter.StreamingResponse(iter([]), status=42)


def rss_kib(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /rss HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
    return int(resp.content)


@pytest.fixture
def streaming_proc() -> Iterator[Proc]:
    proc = Proc(["run", "tests.e2e.apps.streaming:app", "--port", "0"])
    yield proc
    proc.close()


def proc_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_one_gib_to_a_slow_client_in_bounded_memory(streaming_proc: Proc) -> None:
    port = streaming_proc.wait_ready()
    rss_kib(port)  # warm the handler path
    before = proc_rss_kib(streaming_proc.pid)
    total = 1 << 30
    peak = before
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(f"GET /bytes/{total} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        got = 0
        started = time.monotonic()
        # Slow for the first seconds (the server must hold back), then as fast as
        # loopback goes, so 1 GiB finishes in bounded time.
        while got < total:
            slow = time.monotonic() - started < 3
            chunk = sock.recv(4096 if slow else 1 << 20)
            assert chunk, "server closed early"
            got += len(chunk)
            if slow:
                time.sleep(0.01)
                peak = max(peak, proc_rss_kib(streaming_proc.pid))
            elif got % (64 << 20) < (1 << 20):
                peak = max(peak, proc_rss_kib(streaming_proc.pid))
        peak = max(peak, proc_rss_kib(streaming_proc.pid))
    grown_mib = (peak - before) / 1024
    assert got >= total
    assert grown_mib < 32, f"RSS grew {grown_mib:.1f} MiB while streaming 1 GiB"
