"""The loop-lag monitor names the route that blocks the event loop."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

import pytest

import veter

from .conftest import RunningServer, read_responses
from .processes import wait_until

Serve = Callable[..., RunningServer]


def test_blocking_route_is_named_with_its_stack(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    app = veter.App()

    @app.get("/reports/{rid:int}")
    def build_report_synchronously(request: veter.Request, rid: int) -> str:
        time.sleep(0.6)  # a blocking call that should have been run_in_thread
        return "report"

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    server = serve(app, lag_threshold=0.2)
    with caplog.at_level(logging.WARNING, logger="veter.lag"), server.connect() as sock:
        sock.sendall(b"GET /reports/7 HTTP/1.1\r\nHost: t\r\n\r\n")
        (resp,), _ = read_responses(sock, 1)
        assert resp.text == "report"
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_responses(sock, 1)
    blocked = [r for r in caplog.records if "event loop blocked" in r.getMessage()]
    assert len(blocked) == 1, [r.getMessage() for r in caplog.records]
    message = blocked[0].getMessage()
    assert "route GET /reports/{rid:int}" in message
    assert "build_report_synchronously" in message
    assert "time.sleep(0.6)" in message
    monitor = server.server.lag_monitor if server.server else None
    assert monitor is not None
    assert monitor.stalls == 1
    # The stall's length is recorded when the loop next turns, which may be just
    # after it served the next request.
    wait_until(lambda: monitor.max_lag > 0.4, timeout=5)
    assert [r.getMessage() for r in caplog.records if "ran again" in r.getMessage()]


def test_a_stall_outside_any_request_is_seen(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    """A loop that was idle (nothing to ask it) and is then blocked by a timer's
    callback: not a request, not the core; the watchdog still sees it."""
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    server = serve(app, lag_threshold=0.2)
    monitor = server.server.lag_monitor if server.server else None
    assert monitor is not None and server.loop is not None
    with caplog.at_level(logging.WARNING, logger="veter.lag"):
        server.loop.call_soon_threadsafe(server.loop.call_later, 0.3, time.sleep, 0.6)
        wait_until(lambda: monitor.stalls == 1, timeout=5)
        with server.connect() as sock:  # and it serves again afterwards
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            (resp,), _ = read_responses(sock, 1)
            assert resp.text == "ok"
    blocked = [r.getMessage() for r in caplog.records if "event loop blocked" in r.getMessage()]
    assert len(blocked) == 1
    assert "code outside any route handler" in blocked[0]


def test_an_idle_server_is_not_woken_by_the_monitor(serve: Serve) -> None:
    """The watchdog sees an idle loop waiting for events and asks it nothing: an idle
    worker costs no CPU for being watched (Linux: it reads the loop thread's system
    call from /proc)."""
    if sys.platform != "linux":
        pytest.skip("reads /proc/self/task/<tid>/syscall")
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    server = serve(app, lag_threshold=0.1)
    monitor = server.server.lag_monitor if server.server else None
    assert monitor is not None and monitor.watch is not None
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_responses(sock, 1)
    before = monitor.watch.pings
    time.sleep(0.5)  # twenty watchdog periods of an idle loop
    # A look that falls while the loop runs its own tick asks it once (a rare
    # coincidence); looking at an idle loop it cannot see waiting asks every period.
    assert monitor.watch.pings - before <= 2
    assert monitor.stalls == 0


def test_fast_routes_raise_no_warning(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    server = serve(app, lag_threshold=0.2)
    with caplog.at_level(logging.WARNING, logger="veter.lag"), server.connect() as sock:
        for _ in range(50):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_responses(sock, 1)
    assert not [r for r in caplog.records if r.name == "veter.lag"]
