"""Resource limits over real sockets: what one connection (or one client) can make a
worker hold. The per-request caps (start line, fields, body, chunks, extensions,
trailers) have corpus cases at and over each limit (tests/corpus); here are the
ones that need time or volume: clients that send forever, pipelines deeper than
max_pipelined, clients that never read, and the connection cap."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
from click.testing import CliRunner

import veter
from veter.cli import main
from veter.config import ServerConfig
from veter.testing import AsyncTestClient

from .conftest import RunningServer, read_responses, wait_closed

Serve = Callable[..., RunningServer]

#: Upper bound on what a test client may push before the server must have stopped it.
SEND_BUDGET = 64 * 2**20


def make_app(state: dict[str, int] | None = None) -> veter.App:
    app = veter.App()
    counters = state if state is not None else {}

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    @app.post("/upload")
    async def upload(request: veter.Request) -> str:
        return str(len(await request.body()))

    @app.get("/slow/{n:int}")
    async def slow(request: veter.Request, n: int) -> str:
        counters["now"] = counters.get("now", 0) + 1
        counters["peak"] = max(counters.get("peak", 0), counters["now"])
        await asyncio.sleep(0.002)
        counters["now"] -= 1
        return str(n)

    return app


def test_handlers_in_flight_per_connection_never_exceed_max_pipelined(serve: Serve) -> None:
    state: dict[str, int] = {}
    server = serve(make_app(state), max_pipelined=4)
    with server.connect() as sock:
        sock.sendall(b"".join(f"GET /slow/{i} HTTP/1.1\r\nHost: t\r\n\r\n".encode() for i in range(200)))
        responses, closed = read_responses(sock, 200)
    assert [r.text for r in responses] == [str(i) for i in range(200)] and not closed
    assert state["peak"] == 4


def push_until_stopped(sock: socket.socket, head: bytes, piece: bytes) -> int:
    """Sends ``head`` then ``piece`` over and over until the server stops taking
    bytes (it closed, or reading paused and the buffers are full); returns the bytes
    sent. Fails if the server takes more than SEND_BUDGET."""
    sock.sendall(head)
    sent = len(head)
    sock.settimeout(2.0)  # a send blocked this long means the server stopped reading
    try:
        while sent < SEND_BUDGET:
            sent += sock.send(piece)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        return sent
    raise AssertionError(f"the server kept reading past {SEND_BUDGET} bytes")


def answer_then_close(sock: socket.socket) -> bytes:
    try:
        return wait_closed(sock)
    except ConnectionResetError:  # reset after its answer, with our bytes unread
        return b""


@pytest.mark.parametrize(
    ("head", "piece", "status"),
    [
        (b"GET /", b"a" * 4096, b"414"),  # an endless request line
        (b"GET / HTTP/1.1\r\nHost: t\r\nX: ", b"a" * 4096, b"431"),  # an endless field
        (b"GET / HTTP/1.1\r\nHost: t\r\n", b"X-Many: v\r\n" * 64, b"431"),  # fields without end
        # An endless chunked body of 1-byte chunks: cut at max_chunk_count, long
        # before max_body_bytes.
        (
            b"POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1\r\nx\r\n" * 512,
            b"413",
        ),
        # An endless chunk extension.
        (b"POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1;a=", b"b" * 4096, b"400"),
    ],
)
def test_a_client_that_sends_forever_is_cut_off(
    serve: Serve, head: bytes, piece: bytes, status: bytes
) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sent = push_until_stopped(sock, head, piece)
        answer = answer_then_close(sock)
    # The answer may be lost to a reset when the server closes with our bytes
    # unread; what matters is that it stopped reading early.
    assert answer == b"" or answer.startswith(b"HTTP/1.1 " + status), answer[:80]
    assert sent < 16 * 2**20, f"the server read {sent} bytes before refusing"


def test_an_oversized_body_is_refused_before_it_is_read(serve: Serve) -> None:
    server = serve(make_app(), max_body_bytes=1024)
    with server.connect() as sock:
        sock.sendall(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
        assert resp.status == 413 and resp.headers["connection"] == "close"
        assert wait_closed(sock) == b""


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_refused_upload_reaches_the_client_that_sends_first_and_reads_after(
    serve: Serve, framing: str
) -> None:
    # As most clients do: the whole body is written before the answer is read. The
    # server refuses early and half-closes, reading and dropping the rest (lingering),
    # so the 413 arrives instead of a reset that would discard it.
    server = serve(make_app(), max_body_bytes=1024)
    body = b"z" * (2 << 20)
    if framing == "chunked":
        head = b"POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        payload = head + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    else:
        payload = b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    for _ in range(20):
        with server.connect() as sock:
            sock.sendall(payload)
            answer = wait_closed(sock)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]
        # The rest of the body is never read: the answer says the connection ends.
        assert b"\r\nConnection: close\r\n" in answer.split(b"\r\n\r\n")[0] + b"\r\n", answer


def test_linger_off_closes_at_once(serve: Serve) -> None:
    server = serve(make_app(), max_body_bytes=1024, linger_timeout=0)
    with server.connect() as sock:
        sock.sendall(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
        assert resp.status == 413
        assert wait_closed(sock) == b""


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def test_a_client_that_pipelines_forever_and_never_reads_is_paused(serve: Serve) -> None:
    server = serve(make_app())
    before = rss()
    with server.connect() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        # Requests keep coming, no answer is read: the server must stop reading
        # (its output is over the transport's high-water mark) instead of queuing.
        sent = push_until_stopped(sock, b"", b"GET / HTTP/1.1\r\nHost: t\r\n\r\n" * 256)
        grown = rss() - before
        served = server.server.dispatcher.requests_served if server.server and server.server.dispatcher else 0
    assert sent < SEND_BUDGET
    assert grown < 32 * 2**20, f"memory grew by {grown >> 20} MiB"
    # Every request the server took was parsed and answered into a bounded buffer,
    # not held: far fewer than were sent.
    assert served < sent // 28


def test_connections_per_worker_are_capped(serve: Serve) -> None:
    server = serve(make_app(), max_connections=2)
    first, second = server.connect(), server.connect()
    try:
        for sock in (first, second):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            (resp,), _ = read_responses(sock, 1)
            assert resp.status == 200
        third = server.connect()
        third.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        third.settimeout(0.3)
        with pytest.raises(TimeoutError):
            third.recv(1)  # over the cap: not served while the other two are open
        first.close()
        (resp,), _ = read_responses(third, 1)
        assert resp.status == 200
        third.close()
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(
    ("setting", "value"),
    [("max_chunk_count", 0), ("max_chunk_ext_bytes", -1), ("max_trailer_bytes", -1), ("max_header_count", 0)],
)
def test_limit_settings_are_validated(setting: str, value: int) -> None:
    with pytest.raises(ValueError, match=setting):
        ServerConfig(**{setting: value})


def test_every_parser_limit_is_a_cli_flag() -> None:
    text = CliRunner().invoke(main, ["run", "--help"]).output
    for flag in ("--max-start-line", "--max-header-count", "--max-header-bytes", "--max-body-bytes"):
        assert flag in text
    for flag in ("--max-chunk-count", "--max-chunk-ext-bytes", "--max-trailer-bytes", "--max-pipelined"):
        assert flag in text


def test_limits_reach_the_parser() -> None:
    """The core reads its limits from the ServerConfig it is built with."""
    config = ServerConfig(max_chunk_count=2, max_chunk_ext_bytes=3, max_trailer_bytes=0, max_body_bytes=4)
    head = b"POST /upload HTTP/1.1\r\nHost: t\r\n"
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
    cases = {
        chunked + b"1\r\na\r\n0\r\n\r\n": 200,  # two chunks, the last included
        chunked + b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n": 413,  # three
        chunked + b"1;abcd\r\na\r\n0\r\n\r\n": 400,  # 5 bytes of extension
        chunked + b"1\r\na\r\n0\r\nX-T: y\r\n\r\n": 431,  # any trailer
        head + b"Content-Length: 5\r\n\r\nabcde": 413,
    }

    async def statuses() -> list[int]:
        async with AsyncTestClient(make_app(), config=config) as client:
            return [(await client.send_raw(raw)).status_code for raw in cases]

    assert asyncio.run(statuses()) == list(cases.values())
