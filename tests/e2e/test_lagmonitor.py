"""The loop-lag monitor names the route that blocks the event loop."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

import veter

from .conftest import RunningServer, read_responses

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
    assert monitor.max_lag > 0.4


def test_fast_routes_raise_no_warning(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    server = serve(app, lag_threshold=0.2)
    with caplog.at_level(logging.WARNING, logger="veter.lag"), server.connect() as sock:
        for _ in range(50):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_responses(sock, 1)
    assert not [r for r in caplog.records if r.name == "veter.lag"]
