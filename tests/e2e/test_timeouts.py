"""Connection timeouts: slow heads (slowloris), slow bodies, handler deadlines,
clients that stop reading."""

from __future__ import annotations

import asyncio
import socket
import statistics
import threading
import time
from collections.abc import Callable

import veter

from .conftest import RunningServer, read_responses, wait_closed

Serve = Callable[..., RunningServer]


def make_app(cancelled: list[str] | None = None) -> veter.App:
    app = veter.App()
    seen = cancelled if cancelled is not None else []

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    @app.get("/sleep")
    async def sleep(request: veter.Request) -> str:
        try:
            await asyncio.sleep(float(request.query.get("s", "5")))
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "slept"

    @app.post("/upload")
    async def upload(request: veter.Request) -> str:
        return str(len(await request.body()))

    @app.get("/big")
    def big(request: veter.Request) -> bytes:
        return b"x" * (1 << 20)

    return app


def latency(port: int) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        start = time.perf_counter()
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_responses(sock, 1)
        return time.perf_counter() - start


def test_slowloris_closed_at_header_timeout_while_others_are_served(serve: Serve) -> None:
    server = serve(make_app(), header_timeout=2.0)
    baseline = statistics.median(latency(server.port) for _ in range(20))
    attackers = [server.connect(timeout=10) for _ in range(200)]
    closed_after: dict[int, float] = {}
    start = time.monotonic()
    stop = threading.Event()

    def drip() -> None:
        # One header byte per second on every connection, like the slowloris tool.
        head = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 100
        for i in range(len(head)):
            if stop.is_set():
                return
            for n, sock in enumerate(attackers):
                if n in closed_after:
                    continue
                try:
                    sock.sendall(head[i : i + 1])
                except OSError:
                    closed_after.setdefault(n, time.monotonic() - start)
            stop.wait(1.0)

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    during = [latency(server.port) for _ in range(40)]
    for n, sock in enumerate(attackers):
        data = wait_closed(sock, timeout=10)
        closed_after.setdefault(n, time.monotonic() - start)
        assert data.startswith(b"HTTP/1.1 408 "), data[:40]
        sock.close()
    stop.set()
    dripper.join(5)
    worst = max(closed_after.values())
    assert worst < 2.0 + 1.0, f"a slow connection lived {worst:.2f} s with a 2 s header timeout"
    assert min(closed_after.values()) > 1.5
    assert statistics.median(during) < baseline + 0.02, (baseline, statistics.median(during))


def test_slow_body_is_408(serve: Serve) -> None:
    server = serve(make_app(), body_timeout=0.5)
    with server.connect() as sock:
        sock.sendall(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        start = time.monotonic()
        data = wait_closed(sock)
        took = time.monotonic() - start
    assert data.startswith(b"HTTP/1.1 408 ")
    assert 0.4 < took < 1.5


def test_handler_deadline_cancels_and_answers_504(serve: Serve) -> None:
    cancelled: list[str] = []
    server = serve(make_app(cancelled), request_timeout=0.5)
    with server.connect() as sock:
        start = time.monotonic()
        sock.sendall(b"GET /sleep?s=5 HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
        took = time.monotonic() - start
        assert resp.status == 504
        assert 0.45 < took < 1.2
        # The connection keeps serving.
        sock.sendall(b"GET /sleep?s=0.01 HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
        assert (resp.status, resp.text) == (200, "slept")
    assert cancelled == ["cancelled"]


def test_app_middleware_sees_the_deadline_504(serve: Serve) -> None:
    cancelled: list[str] = []
    app = make_app(cancelled)
    seen: list[int] = []

    @app.middleware
    async def cors(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
        try:
            response = await call_next(request)
        except asyncio.CancelledError:
            seen.append(-1)  # the handler's chain is cancelled at the deadline
            raise
        seen.append(response.status)
        response.set_header("Access-Control-Allow-Origin", "*")
        return response

    server = serve(app, request_timeout=0.5)
    with server.connect() as sock:
        sock.sendall(
            b"GET /sleep?s=5 HTTP/1.1\r\nHost: t\r\n\r\nGET /sleep?s=0.01 HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        (late, after), _ = read_responses(sock, 2)
    assert (late.status, late.text) == (504, "handler deadline exceeded")
    assert late.headers["access-control-allow-origin"] == "*"
    assert (after.status, after.text) == (200, "slept")
    assert cancelled == ["cancelled"]
    assert sorted(seen) == [-1, 200, 504]


def test_request_timeout_zero_means_no_deadline(serve: Serve) -> None:
    server = serve(make_app(), request_timeout=0)
    with server.connect() as sock:
        sock.sendall(b"GET /sleep?s=0.6 HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
    assert resp.status == 200


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def test_client_that_stops_reading_is_dropped(serve: Serve) -> None:
    server = serve(make_app(), write_timeout=0.5)
    before = rss()
    peak = before
    sock = server.connect()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        # 64 pipelined 1 MiB responses, never read: far more than the socket buffers.
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n" * 64)
        dispatcher = server.server.dispatcher if server.server else None
        assert dispatcher is not None
        start = time.monotonic()
        while not dispatcher.connection_count:  # accepted, not yet dropped
            assert time.monotonic() - start < 5
            time.sleep(0.001)
        while dispatcher.connection_count:
            assert time.monotonic() - start < 5, "the stalled connection was not dropped"
            peak = max(peak, rss())
            time.sleep(0.05)
        assert time.monotonic() - start < 0.5 + 1.0
        # 64 MiB of responses were asked for; the server held at most a few batches.
        assert peak - before < 16 * 2**20, f"memory grew by {(peak - before) >> 20} MiB"
    finally:
        sock.close()
