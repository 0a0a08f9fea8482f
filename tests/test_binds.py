"""Where a server listens (veter.binds): parsing, the listening set, and the errors."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from veter.binds import (
    BindError,
    Endpoint,
    adopt,
    endpoints_for,
    listen,
    parse,
    remove_unix_file,
    systemd_fds,
)


@pytest.mark.parametrize(
    ("text", "endpoint"),
    [
        ("127.0.0.1:8000", Endpoint("tcp", host="127.0.0.1", port=8000)),
        ("[::1]:0", Endpoint("tcp", host="::1", port=0)),
        ("[::]:443", Endpoint("tcp", host="::", port=443)),
        ("localhost:80", Endpoint("tcp", host="localhost", port=80)),
        ("unix:/run/app.sock", Endpoint("unix", path="/run/app.sock")),
        ("fd://3", Endpoint("fd", fd=3)),
    ],
)
def test_parse(text: str, endpoint: Endpoint) -> None:
    assert parse(text) == endpoint
    assert str(endpoint) == text


@pytest.mark.parametrize("text", ["8000", "::1:80", "host:", ":80", "host:99999", "unix:", "fd://x", "[::1]"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="bind"):
        parse(text)


def test_the_listening_set() -> None:
    assert endpoints_for((), None, None, "0.0.0.0", 80, environ={}) == [
        Endpoint("tcp", host="0.0.0.0", port=80)
    ]
    both = endpoints_for((), "/tmp/a.sock", 7, "h", 1, environ={})
    assert both == [Endpoint("unix", path="/tmp/a.sock"), Endpoint("fd", fd=7)]
    assert endpoints_for(("[::1]:1", "unix:/x"), "/ignored", None, "h", 1, environ={})[0].host == "::1"
    systemd = {"LISTEN_FDS": "2", "LISTEN_PID": str(os.getpid())}
    assert systemd_fds(systemd) == [3, 4]
    assert [e.fd for e in endpoints_for((), None, None, "h", 1, environ=systemd)] == [3, 4]
    # Meant for another process (a parent that did not unset them): ignored.
    assert systemd_fds({"LISTEN_FDS": "2", "LISTEN_PID": "1"}) == []
    with pytest.raises(BindError, match="LISTEN_FDS"):
        systemd_fds({"LISTEN_FDS": "two", "LISTEN_PID": str(os.getpid())})


def test_address_in_use_is_a_clear_error() -> None:
    taken = listen(Endpoint("tcp", host="127.0.0.1", port=0), 16)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(BindError, match=rf"cannot listen on 127.0.0.1:{port}: the address is in use"):
            listen(Endpoint("tcp", host="127.0.0.1", port=port), 16)
        with pytest.raises(BindError, match="no network interface"):
            listen(Endpoint("tcp", host="192.0.2.1", port=0), 16)
    finally:
        taken.close()


def test_unix_socket_stale_file_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "app.sock"
    first = listen(Endpoint("unix", path=str(path)), 16, uds_mode=0o600)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(BindError, match="another server listens on it"):
        listen(Endpoint("unix", path=str(path)), 16)
    first.close()  # died without removing its file: the file is stale now
    second = listen(Endpoint("unix", path=str(path)), 16)
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(path))
    client.close()
    remove_unix_file(second)
    second.close()
    assert not path.exists()
    path.write_text("not a socket")
    with pytest.raises(BindError, match="exists and is not a socket"):
        listen(Endpoint("unix", path=str(path)), 16)
    assert path.read_text() == "not a socket"


def test_remove_leaves_a_successors_file(tmp_path: Path) -> None:
    path = tmp_path / "app.sock"
    old = listen(Endpoint("unix", path=str(path)), 16)
    path.unlink()  # replaced behind its back (by an operator, or a deploy script)
    new = listen(Endpoint("unix", path=str(path)), 16)
    remove_unix_file(old)
    old.close()
    assert path.exists(), "the old server removed its successor's socket"
    remove_unix_file(new)
    new.close()
    assert not path.exists()


def test_adopt_checks_the_descriptor() -> None:
    with pytest.raises(BindError, match="fd://999"):
        adopt(999)
    unbound = socket.socket()
    try:
        with pytest.raises(BindError, match="not listening"):
            adopt(unbound.fileno())
        assert unbound.fileno() != -1, "a refused descriptor is left open"
    finally:
        unbound.close()
    listening = socket.create_server(("127.0.0.1", 0))
    adopted = adopt(listening.detach())
    assert adopted.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    adopted.close()
