"""Listening sockets over real processes: several binds at once (IPv4, IPv6, a Unix
socket), an inherited descriptor, systemd socket activation, and the errors a
user sees for an address in use or a stale socket file."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import read_responses
from .processes import Proc

APP = "tests.e2e.apps.supervised:app"


def ask(family: socket.AddressFamily, address: object, method: bytes = b"GET") -> bytes:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(address)
        if method == b"POST":
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        else:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        (response,), _ = read_responses(sock, 1)
    assert response.status_code == 200
    return response.content


def ports_of(proc: Proc) -> list[int]:
    """The TCP ports of the "veter serving on URL, URL (...)" line."""
    line = proc.wait_for(r"veter serving on .*").string
    return [int(port) for port in re.findall(r"https?://(?:\[[^\]]+\]|[^:/\s]+):(\d+)", line)]


@pytest.fixture
def veter_run() -> Callable[..., Proc]:
    procs: list[Proc] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Proc:
        proc = Proc(["run", APP, *args], env=env)
        procs.append(proc)
        return proc

    yield start  # type: ignore[misc]
    for proc in procs:
        proc.close()


def test_several_binds_at_once(veter_run: Callable[..., Proc], tmp_path: Path) -> None:
    path = tmp_path / "app.sock"
    proc = veter_run(
        "--workers",
        "2",
        "--bind",
        "127.0.0.1:0",
        "--bind",
        "[::1]:0",
        "--bind",
        f"unix:{path}",
        "--uds-mode",
        "0666",
    )
    proc.wait_ready()
    v4, v6 = ports_of(proc)[:2]
    assert oct(path.stat().st_mode & 0o777) == "0o666"
    for _ in range(4):
        assert ask(socket.AF_INET, ("127.0.0.1", v4)).startswith(b"pid=")
        assert ask(socket.AF_INET6, ("::1", v6)).startswith(b"pid=")
        assert ask(socket.AF_UNIX, str(path)).startswith(b"pid=")
        assert ask(socket.AF_UNIX, str(path), b"POST").endswith(b" hi")
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.proc.wait(30) == 0
    assert not path.exists(), "the socket file is removed on stop"


def test_stale_socket_file_is_replaced(veter_run: Callable[..., Proc], tmp_path: Path) -> None:
    path = tmp_path / "app.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: what kill -9 leaves behind
    # --bind wins over --uds: only the TCP socket listens, the file is left alone.
    proc = veter_run("--bind", "127.0.0.1:0", "--uds", str(path))
    proc.wait_ready()
    assert "unix:" not in proc.wait_for(r"veter serving on").string
    proc.close()
    assert path.is_socket()
    proc = veter_run("--uds", str(path), "--single-process")
    proc.wait_for(r"veter serving on unix:")
    assert ask(socket.AF_UNIX, str(path)).startswith(b"pid=")


def test_clear_errors(veter_run: Callable[..., Proc], tmp_path: Path) -> None:
    first = veter_run("--port", "0")
    port = first.wait_ready()
    second = veter_run("--port", str(port))
    assert second.proc.wait(30) == 1
    assert f"Error: cannot listen on 127.0.0.1:{port}: the address is in use" in second.output()
    assert "Traceback" not in second.output()
    not_a_socket = tmp_path / "file"
    not_a_socket.write_text("keep me")
    third = veter_run("--uds", str(not_a_socket))
    assert third.proc.wait(30) == 1
    assert "exists and is not a socket" in third.output()
    assert not_a_socket.read_text() == "keep me"
    fourth = veter_run("--fd", "97")
    assert fourth.proc.wait(30) == 1
    assert "cannot serve on fd://97" in fourth.output()


def test_inherited_descriptor_and_systemd_activation(veter_run: Callable[..., Proc]) -> None:
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    fd = listening.fileno()
    # --fd N: a descriptor the parent passes down.
    proc = Proc(["run", APP, "--fd", str(fd), "--workers", "2"], pass_fds=(fd,))
    try:
        proc.wait_ready()
        assert ask(socket.AF_INET, ("127.0.0.1", port)).startswith(b"pid=")
        assert ask(socket.AF_INET, ("127.0.0.1", port), b"POST").endswith(b" hi")
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.proc.wait(30) == 0
    finally:
        proc.close()
    # The socket outlives the server (it is the parent's, as systemd's is) and
    # still completes handshakes: no filter was left on it.
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    # systemd: LISTEN_FDS descriptors start at 3, and LISTEN_PID is the server's
    # own pid (exec keeps it, as systemd sets it between its fork and exec).
    launcher = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); os.environ['LISTEN_PID'] = str(os.getpid()); "
        "os.environ['LISTEN_FDS'] = '1'; "
        f"os.execv(sys.executable, [sys.executable, '-m', 'veter', 'run', '{APP}'])"
    )
    proc = Proc([], pass_fds=(fd,), command=[sys.executable, "-c", launcher, str(fd)])
    try:
        proc.wait_ready()
        assert ask(socket.AF_INET, ("127.0.0.1", port)).startswith(b"pid=")
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.proc.wait(30) == 0
    finally:
        proc.close()
        listening.close()


def test_ipv6_host(veter_run: Callable[..., Proc]) -> None:
    proc = veter_run("--host", "::1", "--port", "0", "--workers", "2")
    port = int(proc.wait_for(r"veter serving on http://\[::1\]:(\d+)").group(1))
    assert ask(socket.AF_INET6, ("::1", port)).startswith(b"pid=")
    assert ask(socket.AF_INET6, ("::1", port), b"POST").endswith(b" hi")
