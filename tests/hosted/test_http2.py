"""Hosted ASGI and WSGI apps over HTTP/2 (h2c by prior knowledge), served as a
user runs them (``veter run module:app``) and driven by httpx and curl: the scope
and environ say HTTP/2, bodies arrive whole in either direction, streamed answers
stream, and many streams share one connection."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.processes import Proc


def start(target: str) -> Proc:
    proc = Proc(["run", target, "--port", "0", "--workers", "1", "--access-log", "off"])
    proc.wait_ready()
    return proc


@pytest.fixture(scope="module")
def asgi() -> Iterator[Proc]:
    proc = start("tests.hosted.apps.raw:app")
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def wsgi() -> Iterator[Proc]:
    proc = start("tests.hosted.apps.wsgi_raw:app")
    try:
        yield proc
    finally:
        proc.close()


def client(proc: Proc) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{proc.port}", http1=False, http2=True, timeout=20)


def test_asgi_scope_and_bodies(asgi: Proc) -> None:
    with client(asgi) as c:
        r = c.get("/scope", params={"q": "1"}, headers={"x-test": "yes"})
        assert r.http_version == "HTTP/2"
        scope = r.json()
        assert scope["http_version"] == "2" and scope["method"] == "GET"
        assert scope["path"] == "/scope" and scope["query_string"] == "q=1"
        names = [n for n, _ in scope["headers"]]
        assert "x-test" in names and "host" in names
        assert not any(n.startswith(":") for n in names), "pseudo-headers reached the app"
        # A body of unknown length: no transfer-encoding (HTTP/2 has none) in the scope.
        scope = c.post("/scope", content=iter([b"a", b"b"])).json()
        assert "transfer-encoding" not in [n for n, _ in scope["headers"]]
        body = bytes(range(256)) * 2000
        assert c.post("/echo", content=body).content == body
        assert (
            c.post("/echo", content=iter([b"a" * 70_000, b"b" * 70_000])).content
            == b"a" * 70_000 + b"b" * 70_000
        )
        assert c.post("/echo-halves", content=b"0123456789").content == b"0123456789"
        r = c.get("/stream", params={"n": "4", "size": "3"})
        assert r.status_code == 200 and len(r.content) == 12


def test_asgi_streams_share_a_connection(asgi: Proc) -> None:
    async def run() -> list[bytes]:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{asgi.port}", http1=False, http2=True, timeout=20
        ) as c:
            answers = await asyncio.gather(
                *(c.post("/echo", content=f"body {i}".encode()) for i in range(100))
            )
            return [a.content for a in answers]

    assert asyncio.run(run()) == [f"body {i}".encode() for i in range(100)]


def test_wsgi_environ_and_bodies(wsgi: Proc) -> None:
    with client(wsgi) as c:
        r = c.get("/environ")
        environ = r.json()
        assert r.http_version == "HTTP/2" and environ["SERVER_PROTOCOL"] == "HTTP/2"
        r = c.post("/echo", content=b"line one\nline two\n")
        assert r.json() == ["line one\n", "line two\n"]
        r = c.get("/generator")
        assert r.status_code == 200


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_posts_json_to_a_hosted_app(asgi: Proc) -> None:
    out = subprocess.run(
        ["curl", "-s", "--http2-prior-knowledge", "-H", "content-type: application/json",
         "-d", '{"a": 1}', f"http://127.0.0.1:{asgi.port}/echo"],
        capture_output=True, check=True, timeout=20,
    ).stdout  # fmt: skip
    assert json.loads(out) == {"a": 1}
