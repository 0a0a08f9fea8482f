"""HTTPS with a self-signed certificate made here: in one process, with a master
and workers, ALPN, and clear errors for a bad certificate."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

import veter
from veter.config import ServerConfig
from veter.tls import context_for

from .conftest import RunningServer, read_responses
from .processes import Proc, children_of


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def client_context(cert: Path, alpn: tuple[str, ...] = ("http/1.1",)) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    context.set_alpn_protocols(list(alpn))
    return context


def hello_app() -> veter.App:
    app = veter.App()

    @app.get("/")
    def hello(request: veter.Request) -> str:
        return "secure"

    return app


def test_https_in_one_process(serve: Callable[..., RunningServer], cert: tuple[Path, Path]) -> None:
    running = serve(hello_app(), ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[1]))
    raw = socket.create_connection(("127.0.0.1", running.port), timeout=10)
    with client_context(cert[0]).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == "http/1.1"
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        tls.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
        answers, closed = read_responses(tls, 2)  # type: ignore[arg-type]
    assert [a.content for a in answers] == [b"secure", b"secure"] and not closed
    # Plain HTTP on the TLS port gets no HTTP answer.
    with running.connect() as plain:
        plain.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        try:
            data = plain.recv(100)
        except ConnectionResetError:
            data = b""
    assert not data.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("http2", [True, False])
def test_alpn_offers_h2_first_unless_http2_is_off(
    serve: Callable[..., RunningServer], cert: tuple[Path, Path], http2: bool
) -> None:
    running = serve(hello_app(), ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[1]), http2=http2)
    raw = socket.create_connection(("127.0.0.1", running.port), timeout=10)
    with client_context(cert[0], ("h2", "http/1.1")).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == ("h2" if http2 else "http/1.1")


def test_https_with_workers(cert: tuple[Path, Path]) -> None:
    proc = Proc(["run", "tests.e2e.apps.logged:app", "--port", "0", "--workers", "2",
                 "--ssl-certfile", str(cert[0]), "--ssl-keyfile", str(cert[1])])  # fmt: skip
    try:
        port = proc.wait_ready()
        assert "veter serving on https://" in proc.output()
        url = f"https://127.0.0.1:{port}/"
        for _ in range(5):
            with urllib.request.urlopen(url, context=client_context(cert[0]), timeout=10) as answer:
                assert answer.read() == b"hi"
    finally:
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


def test_bad_certificates_are_clear_errors(tmp_path: Path, cert: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        context_for(ServerConfig(ssl_certfile=str(tmp_path / "missing.pem")))
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        context_for(ServerConfig(ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[0])))  # a cert is not a key
    with pytest.raises(ValueError, match="ssl_keyfile needs ssl_certfile"):
        ServerConfig(ssl_keyfile=str(cert[1]))
    assert context_for(ServerConfig()) is None
