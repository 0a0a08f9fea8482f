"""The drain delay (Kubernetes): on SIGTERM an instance first fails readiness and
closes keep-alive connections after their next answer while it goes on serving,
new connections included, for --drain-delay seconds; only then does it drain."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable

import veter
from veter import health

from .conftest import RunningServer, read_responses
from .processes import Proc, wait_workers_ready


def get(port: int, path: str, sock: socket.socket | None = None) -> tuple[int, str, bytes]:
    """Status, the Connection header and the body of GET ``path`` (on ``sock`` or a new connection)."""
    own = sock is None
    conn = sock or socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        (response,), _ = read_responses(conn, 1)
    finally:
        if own:
            conn.close()
    return response.status_code, response.headers.get("connection", ""), response.content


def post(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        (response,), _ = read_responses(conn, 1)
    assert response.content.endswith(b" hi")
    return response.status_code


def test_master_keeps_serving_through_the_delay(master: Callable[..., Proc]) -> None:
    proc = master("--workers", "2", "--drain-delay", "1.5")
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    kept = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert get(port, "/", kept)[:2] == (200, "")  # keep-alive: no Connection header
    assert get(port, "/readyz")[0] == 200
    mark = proc.mark()
    began = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait_for_each(r"leaving: /readyz answers 503", 2, start=mark)
    # Both workers left: every probe fails, every request is still served, and each
    # answer closes its connection so clients reconnect elsewhere.
    for _ in range(6):
        status, connection, body = get(port, "/readyz")
        assert (status, connection) == (503, "close") and b'"leaving"' in body
        assert get(port, "/")[:2] == (200, "close")
        assert post(port) == 200
    status, connection, _ = get(port, "/", kept)
    assert (status, connection) == (200, "close")
    assert kept.recv(1) == b""  # closed after that answer
    kept.close()
    assert time.monotonic() - began < 1.5, "the checks ran inside the delay"
    assert proc.proc.wait(30) == 0
    assert time.monotonic() - began >= 1.5
    assert "drain delay over" in proc.output()


def test_a_second_signal_skips_the_delay(master: Callable[..., Proc]) -> None:
    proc = master("--drain-delay", "60")
    proc.wait_ready()
    wait_workers_ready(proc, 1)
    mark = proc.mark()
    began = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait_for(r"leaving: /readyz", start=mark)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.proc.wait(30) == 0
    assert time.monotonic() - began < 10


def test_single_process_server(serve: Callable[..., RunningServer]) -> None:
    app = veter.App()
    health.enable(app)

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    running = serve(app, drain_delay=0.8)
    assert get(running.port, "/readyz")[0] == 200
    assert running.loop is not None and running.server is not None
    began = time.monotonic()
    running.loop.call_soon_threadsafe(running.server.on_stop_signal, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while get(running.port, "/readyz")[0] != 503:
        assert time.monotonic() < deadline
    assert get(running.port, "/")[:2] == (200, "close")
    assert time.monotonic() - began < 0.8
    running.stop()
    assert time.monotonic() - began >= 0.8
