"""`veter run` as a real process: readiness, graceful SIGTERM/SIGINT, startup errors."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import read_responses, wait_closed
from .processes import ROOT, Proc


@pytest.fixture
def events(tmp_path: Path) -> Path:
    return tmp_path / "events.txt"


@pytest.fixture
def env(events: Path) -> dict[str, str]:
    return {**os.environ, "VETER_TEST_EVENTS": str(events), "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def running(env: dict[str, str]) -> Iterator[Proc]:
    proc = Proc(["run", "tests.e2e.apps.lifecycle:app", "--port", "0", "--graceful-timeout", "5"], env)
    yield proc
    proc.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_drains_in_flight_then_exits_0(running: Proc, events: Path, sig: signal.Signals) -> None:
    port = running.wait_ready()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /slow?s=0.5 HTTP/1.1\r\nHost: t\r\n\r\n")
        # The request is in flight once the server has read it; an idle second
        # connection shows the server is still serving before the signal.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
            probe.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_responses(probe, 1)
        running.proc.send_signal(sig)
        (resp,), _ = read_responses(sock, 1)
        assert wait_closed(sock) == b""
    assert (resp.status, resp.text) == (200, "finished")
    assert resp.headers["connection"] == "close"
    assert running.proc.wait(10) == 0
    assert events.read_text().split() == ["startup", "shutdown"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_graceful_timeout_closes_stragglers(env: dict[str, str], events: Path) -> None:
    proc = Proc(["run", "tests.e2e.apps.lifecycle:app", "--port", "0", "--graceful-timeout", "0.3"], env)
    port = proc.wait_ready()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /slow?s=30 HTTP/1.1\r\nHost: t\r\n\r\n")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
            probe.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_responses(probe, 1)
        start = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(10) == 0
        assert time.monotonic() - start < 5
    output = proc.output()
    proc.close()
    assert "graceful timeout" in output
    assert events.read_text().split() == ["startup", "shutdown"]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("tests.e2e.apps.broken_import:app", "this module fails at import"),
        ("tests.e2e.apps.broken_startup:app", "database unreachable"),
        ("tests.e2e.apps.nope:app", "could not import module"),
        ("tests.e2e.apps.lifecycle:missing", "has no attribute 'missing'"),
        ("tests.e2e.apps.lifecycle", "must look like 'module:app'"),
    ],
)
def test_startup_failures_exit_nonzero(env: dict[str, str], ref: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "veter", "run", ref, "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert message in result.stdout + result.stderr


def test_routes_command(env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "veter", "routes", "examples.hello:app"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "/items/{item_id:int}" in result.stdout
    assert "examples.hello.item" in result.stdout


def test_bad_setting_is_a_clear_error(env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "veter", "run", "examples.hello:app", "--keepalive-timeout", "-1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert "keepalive_timeout must be a positive number" in result.stderr


def test_settings_from_config_file_and_environment_reach_the_workers(tmp_path: Path) -> None:
    (tmp_path / "veter.toml").write_text('server_header = "from-file"\nworkers = 2\n')
    env = {"PYTHONPATH": str(ROOT), "VETER_SERVER_HEADER": "from-env"}
    proc = Proc(["run", "examples.hello:app", "--port", "0"], env, cwd=tmp_path)
    try:
        port = proc.wait_ready()
        proc.wait_for(r"worker \d+ ready")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            head = b""
            while chunk := sock.recv(4096):
                head += chunk
        assert b"\r\nserver: from-env\r\n" in head.lower()
    finally:
        proc.close()
    shown = subprocess.run(
        [sys.executable, "-m", "veter", "config", "examples.hello:app"],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert "server_header = 'from-env'" in shown.stdout and "# env VETER_SERVER_HEADER" in shown.stdout
    assert re.search(r"workers = 2 +# veter.toml", shown.stdout), shown.stdout
