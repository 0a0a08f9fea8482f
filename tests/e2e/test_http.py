"""HTTP/1.1 behaviour over real sockets."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

import pytest

import veter

from .conftest import RunningServer, read_responses, wait_closed

Serve = Callable[..., RunningServer]


def make_app(calls: list[str] | None = None) -> veter.App:
    app = veter.App()
    seen = calls if calls is not None else []

    @app.get("/")
    def index(request: veter.Request) -> str:
        seen.append(request.path)
        return "hello"

    @app.get("/n/{n:int}")
    async def numbered(request: veter.Request, n: int) -> str:
        seen.append(request.path)
        # Later requests finish first, so order is the server's doing, not luck.
        await asyncio.sleep(0.002 * (8 - n % 8))
        return f"n={n}"

    @app.post("/echo")
    async def echo(request: veter.Request) -> bytes:
        seen.append(request.path)
        return await request.body()

    @app.get("/boom")
    def boom(request: veter.Request) -> str:
        raise RuntimeError("boom")

    @app.get("/slow")
    async def slow(request: veter.Request) -> str:
        await asyncio.sleep(float(request.query.get("s", "0.2")))
        return "slow done"

    return app


def get(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n".encode()


def test_keep_alive(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        for _ in range(3):
            sock.sendall(get("/"))
            (resp,), closed = read_responses(sock, 1)
            assert (resp.status, resp.text, closed) == (200, "hello", False)
            assert "connection" not in resp.headers


def test_http10_closes_unless_keep_alive(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = wait_closed(sock)
        assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close\r\n" in data
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        (resp,), closed = read_responses(sock, 1)
        assert resp.headers["connection"] == "keep-alive" and not closed
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        (resp,), closed = read_responses(sock, 1)
        assert resp.status == 200 and not closed


def test_connection_close(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(get("/", "Connection: close\r\n"))
        data = wait_closed(sock)
        assert b"Connection: close\r\n" in data and data.endswith(b"hello")


def test_pipelining_keeps_order(serve: Serve) -> None:
    calls: list[str] = []
    server = serve(make_app(calls))
    batch = b"".join(get(f"/n/{i}") for i in range(16)) + get("/")
    with server.connect() as sock:
        sock.sendall(batch)
        responses, closed = read_responses(sock, 17)
    assert [r.text for r in responses] == [f"n={i}" for i in range(16)] + ["hello"]
    assert not closed


def test_pipelined_requests_beyond_max_pipelined_wait(serve: Serve) -> None:
    server = serve(make_app(), max_pipelined=2)
    with server.connect() as sock:
        sock.sendall(b"".join(get(f"/n/{i}") for i in range(10)))
        responses, _ = read_responses(sock, 10)
    assert [r.text for r in responses] == [f"n={i}" for i in range(10)]


def test_content_length_body_in_pieces(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234")
        sock.sendall(b"56789")
        (resp,), _ = read_responses(sock, 1)
    assert resp.content == b"0123456789"


def test_chunked_body(serve: Serve) -> None:
    server = serve(make_app())
    body = b"5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nX-Trailer: dropped\r\n\r\n"
    with server.connect() as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(body), 7):
            sock.sendall(body[i : i + 7])
        sock.sendall(get("/"))
        responses, _ = read_responses(sock, 2)
    assert [r.content for r in responses] == [b"hello world!", b"hello"]


def test_expect_100_continue(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        sock.settimeout(10)
        interim = sock.recv(1024)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"ping")
        (resp,), _ = read_responses(sock, 1)
    assert (resp.status, resp.content) == (200, b"ping")


def test_head(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n" + get("/"))
        (head, after), _ = read_responses(sock, 2, head=[True, False])
    assert (head.status, head.content, head.headers["content-length"]) == (200, b"", "5")
    assert after.text == "hello"


@pytest.mark.parametrize(
    ("request_bytes", "status", "settings"),
    [
        (b"GET / HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n", 400, {}),
        (b"GET / HTTP/1.1\nHost: t\n\n", 400, {}),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, {}),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: +1\r\n\r\nx", 400, {}),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n", 413, {"max_body_bytes": 10}),
        (b"GET /" + b"a" * 200 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414, {"max_start_line": 100}),
        (b"GET / HTTP/1.1\r\nHost: t\r\n" + b"X: 1\r\n" * 20 + b"\r\n", 431, {"max_header_count": 10}),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, {}),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505, {}),
    ],
)
def test_errors_close_and_stop_the_pipeline(
    serve: Serve, request_bytes: bytes, status: int, settings: dict[str, int]
) -> None:
    calls: list[str] = []
    server = serve(make_app(calls), **settings)
    with server.connect() as sock:
        sock.sendall(get("/") + request_bytes + get("/"))
        data = wait_closed(sock)
    first, rest = data.split(b"hello", 1)
    assert first.startswith(b"HTTP/1.1 200 OK")
    assert rest.startswith(f"HTTP/1.1 {status} ".encode()), rest
    assert b"Connection: close\r\n" in rest
    assert calls == ["/"], "a request after the rejected one was processed"


def test_chunked_body_over_limit_is_413(serve: Serve) -> None:
    server = serve(make_app(), max_body_bytes=8)
    with server.connect() as sock:
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n"
        )
        data = wait_closed(sock)
    assert data.startswith(b"HTTP/1.1 413 ")


def test_handler_exception_keeps_connection(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(get("/boom") + get("/"))
        responses, closed = read_responses(sock, 2)
    assert [r.status for r in responses] == [500, 200]
    assert not closed


def test_client_disconnects_mid_request(serve: Serve) -> None:
    server = serve(make_app())
    for partial in (b"GET / HT", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 50\r\n\r\nabc"):
        with server.connect() as sock:
            sock.sendall(partial)
    with server.connect() as sock:  # a client that leaves while its handler runs
        sock.sendall(get("/slow?s=0.05"))
    with server.connect() as sock:
        sock.sendall(get("/"))
        (resp,), _ = read_responses(sock, 1)
        assert resp.text == "hello"


def test_idle_keep_alive_connection_closed(serve: Serve) -> None:
    server = serve(make_app(), keepalive_timeout=0.5)
    with server.connect() as sock:
        sock.sendall(get("/"))
        read_responses(sock, 1)
        start = time.monotonic()
        assert wait_closed(sock, timeout=5) == b""
        # Checked once a second: closed after the timeout and within one more tick.
        assert 0.4 <= time.monotonic() - start <= 2.5


def test_half_close_still_answered(serve: Serve) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        sock.sendall(get("/slow?s=0.05"))
        sock.shutdown(socket.SHUT_WR)
        data = wait_closed(sock)
    assert data.endswith(b"slow done")
