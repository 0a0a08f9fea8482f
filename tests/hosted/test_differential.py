"""The same ASGI app and the same bytes, served by veter and by uvicorn: the
answers must agree once ``Date``, ``Server`` and the request id are set aside.

Where they may differ, on purpose (docs/asgi.md, "Where veter differs"):
- framing: an app that sends its whole body in one message without a
  content-length gets ``Content-Length`` from veter and chunked coding from
  uvicorn (RFC 9112 6.1-6.3 leave the choice to the server); the decoded
  bodies must be equal, so the framing headers are compared as "delimited";
- header name case of the server's own headers (``date``/``Date``): field names
  are case-insensitive (RFC 9110 5.1), so names are compared lowercased;
- ``scope["server"]``, ``client`` and the request id differ per run and port.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.e2e.processes import Proc, wait_until

h11 = pytest.importorskip("h11")
pytest.importorskip("uvicorn")

APP = "tests.hosted.apps.raw:app"
IGNORED = {b"date", b"server", b"x-request-id", b"content-length", b"transfer-encoding"}


@dataclass
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


@pytest.fixture(scope="module")
def ports() -> Iterator[tuple[int, int]]:
    veter = Proc(["run", APP, "--single-process", "--port", "0", "--access-log", "off"])
    uvicorn_port = _free_port()
    uvicorn = Proc(
        [],
        command=[
            *_python(),
            "-m",
            "uvicorn",
            APP,
            "--port",
            str(uvicorn_port),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--lifespan",
            "on",
            "--no-access-log",
        ],
    )
    try:
        veter_port = veter.wait_ready()
        uvicorn.wait_for("Uvicorn running on")
        probe: list[Request] = [("GET", "/", [], b"")]
        wait_until(lambda: _answers(uvicorn_port, probe, _raw(probe)) is not None, 10)
        yield veter_port, uvicorn_port
    finally:
        veter.close()
        uvicorn.close()


def _python() -> list[str]:
    import sys

    return [sys.executable]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


Request = tuple[str, str, list[tuple[str, str]], bytes]


def _answers(port: int, requests: list[Request], raw: bytes) -> list[Answer] | None:
    """Sends ``raw`` (the requests, pipelined) and parses one answer per request."""
    conn = h11.Connection(our_role=h11.CLIENT)
    out: list[Answer] = []
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return None
    with sock:
        sock.sendall(raw)
        for method, target, headers, body in requests:
            conn.send(h11.Request(method=method, target=target, headers=[("host", "x"), *headers]))
            if body:
                conn.send(h11.Data(data=body))
            conn.send(h11.EndOfMessage())
            answer = Answer(0, [], b"")
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = sock.recv(65536)
                    conn.receive_data(data)
                    continue
                if isinstance(event, h11.InformationalResponse):
                    continue
                if isinstance(event, h11.Response):
                    answer.status = event.status_code
                    answer.headers = [(n.lower(), v) for n, v in event.headers if n.lower() not in IGNORED]
                elif isinstance(event, h11.Data):
                    answer.body += event.data
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    break
            out.append(answer)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                break
            conn.start_next_cycle()
    return out


def _raw(requests: list[Request]) -> bytes:
    data = b""
    for method, target, headers, body in requests:
        lines = [f"{method} {target} HTTP/1.1", "Host: x", *(f"{n}: {v}" for n, v in headers)]
        data += ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    return data


CASES: dict[str, list[Request]] = {
    "plain GET": [("GET", "/", [], b"")],
    "POST with a length": [("POST", "/echo", [("Content-Length", "11")], b"hello world")],
    "POST chunked": [
        ("POST", "/echo", [("Transfer-Encoding", "chunked")], b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    ],
    "HEAD": [("HEAD", "/", [], b"")],
    "streamed answer": [("GET", "/stream?n=3&size=4", [], b"")],
    "streamed answer with a length": [("GET", "/sized-stream", [], b"")],
    "pipelined": [
        ("GET", "/slow", [], b""),
        ("POST", "/echo", [("Content-Length", "3")], b"abc"),
        ("GET", "/", [], b""),
    ],
    "odd but valid headers": [
        ("GET", "/", [("X-Tab", "a\tb"), ("X-Empty", ""), ("x-MiXeD", "1"), ("X-Long", "v" * 4000)], b""),
    ],
    "escaped path": [("GET", "/nowhere%20at%2Fall", [], b"")],
    "app error": [("GET", "/boom", [], b"")],
    "app returned without answering": [("GET", "/no-answer", [], b"")],
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_answers(ports: tuple[int, int], case: str) -> None:
    veter_port, uvicorn_port = ports
    requests = CASES[case]
    raw = _raw(requests)
    ours = _answers(veter_port, requests, raw)
    theirs = _answers(uvicorn_port, requests, raw)
    assert ours is not None and theirs is not None
    assert [a.status for a in ours] == [a.status for a in theirs]
    for mine, other in zip(ours, theirs, strict=True):
        if mine.status >= 500:
            continue  # the error page is each server's own (docs/asgi.md)
        assert mine.body == other.body
        assert sorted(mine.headers) == sorted(other.headers)


def test_same_scope(ports: tuple[int, int]) -> None:
    veter_port, uvicorn_port = ports
    requests: list[Request] = [("GET", "/scope/a%2Fb?x=1&y=%20", [("X-Thing", "v")], b"")]
    raw = _raw(requests)
    (ours,) = _answers(veter_port, requests, raw) or []
    (theirs,) = _answers(uvicorn_port, requests, raw) or []
    mine, other = json.loads(ours.body), json.loads(theirs.body)
    for scope in (mine, other):
        scope.pop("client")
        scope.pop("server")
        scope["state"].pop("request_id", None)
    # Listed in docs/asgi.md: veter offers the pathsend extension, uvicorn does not.
    assert mine.pop("extensions") == {"http.response.pathsend": {}}
    assert "extensions" not in other
    assert mine == other
