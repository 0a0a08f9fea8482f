"""Response framing over a real socket: Content-Length is always the number of body
bytes that follow, HEAD and no-body statuses carry none, and handler-set headers
can never split a response."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

import veter

from .conftest import RunningServer, read_responses

Serve = Callable[..., RunningServer]

BODIES: dict[str, object] = {
    "/ascii": "hello",
    "/utf8": "h\u00e9llo \u20ac \U0001f600",  # 5 + 1 + 3 + 1 + 4 bytes more than characters
    "/bytes": b"\x00\r\n\xff",
    "/empty": "",
    "/json": {"a": "\u00e9", "b": [1, 2]},
    "/big": "x" * 300_000,
}


def make_app() -> veter.App:
    app = veter.App()
    for path, body in BODIES.items():
        app.add_route(path, lambda request, body=body: body, methods=["GET"])
    for status in (204, 304, 103):
        app.add_route(f"/status/{status}", lambda request, status=status: veter.Response("x", status=status))
    return app


def encoded(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


@pytest.mark.parametrize("path", list(BODIES))
def test_content_length_is_the_body_length_in_bytes(serve: Serve, path: str) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        # GET, HEAD, GET pipelined: if HEAD sent any body byte, the third response
        # would not parse where it must.
        req = f"{{}} {path} HTTP/1.1\r\nHost: t\r\n\r\n"
        sock.sendall((req.format("GET") + req.format("HEAD") + req.format("GET")).encode())
        (get, head, again), closed = read_responses(sock, 3, head=[False, True, False])
    want = encoded(BODIES[path])
    assert get.content == want == again.content
    assert get.headers["content-length"] == str(len(want)) == head.headers["content-length"]
    assert head.content == b"" and not closed


@pytest.mark.parametrize("status", [204, 304, 103])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_no_body_statuses_carry_no_body_and_no_length(serve: Serve, status: int, method: str) -> None:
    server = serve(make_app())
    with server.connect() as sock:
        req = f"{method} /status/{status} HTTP/1.1\r\nHost: t\r\n\r\n"
        sock.sendall(req.encode() + b"GET /ascii HTTP/1.1\r\nHost: t\r\n\r\n")
        sock.settimeout(10)
        data = b""
        while data.count(b"hello") == 0:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    first, _, rest = data.partition(b"\r\n\r\n")
    assert first.startswith(f"HTTP/1.1 {status} ".encode())
    assert b"content-length" not in first.lower() and b"transfer-encoding" not in first.lower()
    # Nothing between the no-body response and the next one.
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize(
    "make",
    [
        lambda: veter.Response("x", headers={"X-A": "a\r\nSet-Cookie: evil=1"}),
        lambda: veter.Response("x", headers={"X-A\r\nSet-Cookie": "1"}),
        lambda: veter.Response("x", headers={"X-A": "a\nb"}),
        lambda: veter.Response("x", content_type="text/plain\r\nX: y"),
        lambda: veter.redirect("/there\r\nSet-Cookie: evil=1"),
        lambda: veter.Response("x", status=600),
        lambda: veter.Response("x", status=99),
    ],
)
def test_a_handler_cannot_split_the_response(serve: Serve, make: Callable[[], veter.Response]) -> None:
    app = veter.App()
    app.add_route("/", lambda request: make(), methods=["GET"])
    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n")
        (first, second), closed = read_responses(sock, 2)
    # The handler's ValueError becomes a plain 500; the connection keeps serving.
    assert first.status == second.status == 500 and not closed
    assert "set-cookie" not in first.headers and "x" not in first.headers


def test_server_header_setting_is_checked() -> None:
    app = veter.App()
    with pytest.raises(ValueError, match="control character"):
        app.build_dispatcher(app.config.with_(server_header="veter\r\nX-Evil: 1"))
