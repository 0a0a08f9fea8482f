"""Forged proxy headers over real sockets: from an untrusted address they change
nothing, from the trusted proxy they set the client in the access log and in
``request.client``; malformed values never fail a request."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

import veter

from .conftest import RunningServer, read_responses

#: Another loopback address: on Linux all of 127.0.0.0/8 reaches the server, but
#: only 127.0.0.1 is a trusted proxy in these tests.
UNTRUSTED = "127.0.0.2"


def whoami() -> veter.App:
    app = veter.App()

    @app.route("/who", methods=["GET", "POST"])
    def who(request: veter.Request) -> dict[str, Any]:
        return {"client": request.client[0], "scheme": request.scheme, "host": request.host}

    return app


def ask(running: RunningServer, source: str, headers: bytes, method: bytes = b"GET") -> dict[str, Any]:
    with socket.create_connection(
        ("127.0.0.1", running.port), timeout=10, source_address=(source, 0)
    ) as sock:
        body = b"x=1" if method == b"POST" else b""
        sock.sendall(
            method
            + b" /who HTTP/1.1\r\nHost: internal:8000\r\n"
            + headers
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        (response,), _ = read_responses(sock, 1)
    assert response.status_code == 200, response.content
    result: dict[str, Any] = orjson.loads(response.content)
    return result


FORGED = b"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nForwarded: for=7.7.7.7;host=evil\r\n"


def test_forged_headers_from_an_untrusted_address(
    serve: Callable[..., RunningServer], tmp_path: Path
) -> None:
    log = tmp_path / "access.log"
    running = serve(whoami(), proxy_headers=True, forwarded_allow_ips="127.0.0.1", access_log=str(log))
    forged = ask(running, UNTRUSTED, FORGED)
    assert forged == {"client": UNTRUSTED, "scheme": "http", "host": "internal:8000"}
    posted = ask(running, UNTRUSTED, b"X-Forwarded-For: 6.6.6.6\r\n", b"POST")
    assert posted["client"] == UNTRUSTED
    proxied = ask(
        running,
        "127.0.0.1",
        b"X-Forwarded-For: 6.6.6.6, 203.0.113.9\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: api.example\r\n",
    )
    assert proxied == {"client": "203.0.113.9", "scheme": "https", "host": "api.example"}
    rfc = ask(running, "127.0.0.1", b'Forwarded: for="[2001:db8::5]:1234";proto=https\r\n')
    assert rfc["client"] == "2001:db8::5"
    running.stop()
    clients = [line.split()[1] for line in log.read_text().splitlines()]
    assert clients == [UNTRUSTED, UNTRUSTED, "203.0.113.9", "2001:db8::5"]


def test_malformed_values_from_the_trusted_proxy(serve: Callable[..., RunningServer]) -> None:
    running = serve(whoami(), proxy_headers=True)
    values = [
        b"garbage",
        b"unknown",
        b"[2001:db8::1",
        b"1.2.3.4.5, ,,",
        b", ".join([b"127.0.0.1"] * 1000),
        b"\xff\xfe\x80",
        b'for="',
        b";;;===,,,",
    ]
    for value in values:
        for name in (b"X-Forwarded-For", b"Forwarded", b"X-Forwarded-Proto", b"X-Forwarded-Host"):
            got = ask(running, "127.0.0.1", name + b": " + value + b"\r\n")
            assert got["client"] == "127.0.0.1", (name, value, got)
            assert got["scheme"] == "http"


def test_off_unless_asked(serve: Callable[..., RunningServer]) -> None:
    running = serve(whoami())
    assert ask(running, "127.0.0.1", FORGED)["client"] == "127.0.0.1"
