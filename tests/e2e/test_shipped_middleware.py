"""The middleware that ships with veter, through a real server and real clients:
curl decodes each compression it negotiates, and reads the CORS headers of a
preflight and of an answer."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest

import veter
from veter.middleware import compress, cors
from veter.streaming import StreamingResponse

from .conftest import RunningServer

Serve = Callable[..., RunningServer]
TEXT = "compressible text " * 500
SITE = "https://app.example"


def make_app() -> veter.App:
    app = veter.App()
    app.middleware(cors(allow_origins=[SITE], allow_methods=["PUT"], allow_headers=["X-Token"]))
    app.middleware(compress())

    @app.get("/text")
    def text(request: veter.Request) -> str:
        return TEXT

    @app.get("/stream")
    def stream(request: veter.Request) -> StreamingResponse:
        def pieces() -> Iterator[str]:
            for i in range(50):
                yield f"line {i} {'y' * 200}\n"

        return StreamingResponse(pieces(), content_type="text/plain")

    return app


def curl(*args: str) -> tuple[str, bytes]:
    """curl's dump of the response head, and the body (decoded when --compressed)."""
    done = subprocess.run(
        ["curl", "-sS", "--max-time", "10", "-D", "-", *args], capture_output=True, check=True
    )
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    return head.decode("latin-1").lower(), body


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
@pytest.mark.parametrize("path", ["/text", "/stream"])
def test_curl_decodes_each_coding(serve: Serve, coding: str, path: str) -> None:
    server = serve(make_app())
    url = f"http://127.0.0.1:{server.port}{path}"
    head, body = curl("--compressed", "-H", f"Accept-Encoding: {coding}", url)
    assert f"content-encoding: {coding}" in head and "vary: accept-encoding" in head
    expected = TEXT if path == "/text" else "".join(f"line {i} {'y' * 200}\n" for i in range(50))
    assert body.decode() == expected
    # Without --compressed curl asks for nothing and gets the identity.
    head, body = curl(url)
    assert "content-encoding" not in head and body.decode() == expected


def test_curl_sees_cors_headers(serve: Serve) -> None:
    server = serve(make_app())
    url = f"http://127.0.0.1:{server.port}/text"
    head, _ = curl(
        "-X",
        "OPTIONS",
        "-H",
        f"Origin: {SITE}",
        "-H",
        "Access-Control-Request-Method: PUT",
        "-H",
        "Access-Control-Request-Headers: x-token",
        url,
    )
    assert head.startswith("http/1.1 204")
    assert f"access-control-allow-origin: {SITE}" in head
    assert "access-control-allow-headers: x-token" in head
    head, _ = curl("-H", "Origin: https://elsewhere.example", url)
    assert head.startswith("http/1.1 200") and "access-control-allow-origin" not in head
    assert "vary: accept-encoding, origin" in head
