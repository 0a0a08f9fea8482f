"""A raw WSGI app served by ``veter run`` (a child process), driven by httpx and by
raw sockets: the environ, ``wsgi.input``, ``write``, ``exc_info``, streaming,
``close()``, errors, the thread pool and the deadline."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.processes import Proc, wait_until
from tests.hosted.apps.sendfile_count import pattern
from tests.hosted.apps.wsgi_raw import BIG_SIZE

APP = "tests.hosted.apps.wsgi_raw:app"


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    proc = Proc(
        [
            "run",
            APP,
            "--single-process",
            "--port",
            "0",
            "--request-timeout",
            "1",
            "--threads",
            "2",
            "--root-path",
            "/api",
        ]
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as c:
        yield c


def exchange(port: int, raw: bytes, timeout: float = 5) -> bytes:
    """Sends ``raw`` and reads until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


def closed(client: httpx.Client) -> dict[str, int]:
    result: dict[str, int] = client.get("/closed").json()
    return result


def test_environ(client: httpx.Client) -> None:
    r = client.get(
        "/environ/caf%C3%A9%2Fx",
        params={"q": "1"},
        headers=[("X-Dup", "a"), ("X-Dup", "b"), ("X_Under", "dropped"), ("Content-Type", "text/x")],
    )
    env: dict[str, Any] = r.json()
    assert env["REQUEST_METHOD"] == "GET"
    assert env["SCRIPT_NAME"] == "/api"
    # PEP 3333: the decoded path's bytes, as latin-1 ("café/x" in UTF-8).
    assert env["PATH_INFO"] == "/environ/café/x".encode().decode("latin-1")
    assert env["QUERY_STRING"] == "q=1"
    assert env["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert env["SERVER_NAME"] == "127.0.0.1"
    assert env["SERVER_PORT"] == str(client.base_url.port)
    assert env["REMOTE_ADDR"] == "127.0.0.1"
    assert env["HTTP_X_DUP"] == "a,b"
    assert "HTTP_X_UNDER" not in env
    assert env["CONTENT_TYPE"] == "text/x"
    assert "HTTP_CONTENT_TYPE" not in env
    assert env["veter.request_id"] == r.headers["x-request-id"]
    assert env["wsgi.url_scheme"] == "http"
    assert (env["wsgi.multithread"], env["wsgi.run_once"]) == (True, False)
    assert "wsgi.input_terminated" not in env  # no chunked body


def test_environ_alike_with_and_without_body(client: httpx.Client) -> None:
    # The core builds both environs from the parsed head; a body adds its
    # CONTENT_* keys and nothing else.
    headers = [
        (b"X-Dup", b"a"),
        (b"X-Dup", b"b"),
        (b"Cookie", b"a=1"),
        (b"Cookie", b"b=2"),
        (b"X-Latin", b"caf\xe9"),
        (b"X_Under", b"dropped"),
    ]
    target = "/environ/caf%C3%A9%2Fx%zz?q=%C3%A9&r"
    got = client.get(target, headers=headers).json()
    posted = client.post(target, headers=headers, content=b"body").json()
    assert got["REQUEST_METHOD"] == "GET" and posted["REQUEST_METHOD"] == "POST"
    assert posted["CONTENT_LENGTH"] == "4" and "CONTENT_LENGTH" not in got
    assert got["HTTP_COOKIE"] == "a=1; b=2"
    assert got["HTTP_X_LATIN"] == "caf\xe9"
    assert got["PATH_INFO"] == "/environ/café/x%zz".encode().decode("latin-1")
    differ = {"REQUEST_METHOD", "CONTENT_LENGTH", "CONTENT_TYPE", "veter.request_id"}
    assert {k: v for k, v in got.items() if k not in differ} == {
        k: v for k, v in posted.items() if k not in differ
    }


def test_input_lines_content_length_and_chunked(client: httpx.Client) -> None:
    body = b"one\ntwo\n" + b"x" * 100_000 + b"\nlast"
    expected = ["one\n", "two\n", "x" * 100_000 + "\n", "last"]
    assert client.post("/echo", content=body).json() == expected

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(body), 7001):
            yield body[i : i + 7001]

    assert client.post("/echo", content=chunks()).json() == expected


def test_body_sent_after_100_continue(server: Proc) -> None:
    # The body is not in the core when the app starts: the thread's first read
    # waits for it on the loop (the interim answer goes out when it is asked for).
    assert server.port is not None
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nExpect: 100-continue\r\n\r\n")
        interim = sock.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"one\ntwo\n")
        data = interim[25:]
        while not data.endswith(b"]"):
            data += sock.recv(1024)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert json.loads(body) == ["one\n", "two\n"]


def test_write_callable(client: httpx.Client) -> None:
    r = client.get("/write")
    assert r.text == "written then returned"
    assert r.headers["transfer-encoding"] == "chunked"


def test_exc_info_before_the_head_replaces_the_status(client: httpx.Client) -> None:
    r = client.get("/exc-info")
    assert (r.status_code, r.text) == (503, "sorry")


def test_exc_info_after_the_head_cuts_the_connection(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    out = exchange(server.port or 0, b"GET /exc-info-late HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"begun" in out
    assert not out.endswith(b"0\r\n\r\n")  # the chunked body never ends: the client can tell
    server.wait_for(r"WSGI app failed on GET /exc-info-late: too late", start=mark)


def test_generator_is_streamed_and_closed(client: httpx.Client) -> None:
    before = closed(client).get("generator", 0)
    r = client.get("/generator")
    assert r.text == "abc"
    assert r.headers["transfer-encoding"] == "chunked"
    # close() follows the last write: the client may ask before the thread got there.
    wait_until(lambda: closed(client).get("generator") == before + 1, 10)


def test_iterable_with_a_content_length_keeps_it_and_is_closed(client: httpx.Client) -> None:
    before = closed(client).get("sized", 0)
    r = client.get("/sized")
    assert (r.text, r.headers["content-length"]) == ("abcdef", "6")
    assert "transfer-encoding" not in r.headers
    wait_until(lambda: closed(client).get("sized") == before + 1, 10)


def test_failing_iterable_cuts_the_stream_and_is_closed(server: Proc, client: httpx.Client) -> None:
    before = closed(client).get("generator-fails", 0)
    out = exchange(server.port or 0, b"GET /generator-fails HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK\r\n")
    assert not out.endswith(b"0\r\n\r\n")
    wait_until(lambda: closed(client).get("generator-fails") == before + 1, 10)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/raise", "boom"),
        ("/bad-status", r"WSGI status must be a code and a reason such as '200 OK', got 'OK'"),
        ("/bad-body", "a WSGI app must produce bytes, got str"),
        ("/no-start", r"the WSGI app produced a body before calling start_response\(\)"),
    ],
)
def test_app_errors_are_500_logged_with_the_request_id(
    server: Proc, client: httpx.Client, path: str, message: str
) -> None:
    mark = server.mark()
    r = client.get(path)
    assert r.status_code == 500
    rid = r.headers["x-request-id"]
    server.wait_for(rf"\[{rid}\] WSGI app failed on GET {path}: {message}", start=mark)
    assert client.get("/write").status_code == 200  # the worker serves on


def test_wsgi_errors_go_to_the_log(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    assert client.get("/errors").text == "logged"
    server.wait_for(r"veter\.wsgi \[\w+\] first line$", start=mark)
    server.wait_for(r"veter\.wsgi \[\w+\] second line$", start=mark)


def test_pool_is_bounded_by_threads(server: Proc) -> None:
    async def run() -> tuple[float, set[str]]:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as c:
            start = time.monotonic()
            rs = await asyncio.gather(*(c.get("/sleep?0.3") for _ in range(4)))
            return time.monotonic() - start, {r.text for r in rs}

    elapsed, threads = asyncio.run(run())
    # Four 0.3 s sleeps on --threads 2: two rounds.
    assert 0.55 < elapsed < 2.0
    assert len(threads) == 2
    assert all(name.startswith("veter-wsgi") for name in threads)


def test_deadline_answers_504(client: httpx.Client) -> None:
    start = time.monotonic()
    r = client.get("/sleep?1.5")
    assert r.status_code == 504
    assert time.monotonic() - start < 1.4


def sendfile_count(client: httpx.Client) -> dict[str, int]:
    result: dict[str, int] = client.get("/sendfile-count").json()
    return result


def test_file_wrapper_goes_out_with_sendfile(client: httpx.Client) -> None:
    before = sendfile_count(client)
    r = client.get("/file-wrapper")
    assert r.headers["content-length"] == str(BIG_SIZE)  # added: the file's size is known
    assert r.content == pattern(BIG_SIZE)
    r = client.get("/file-wrapper-from")
    assert r.headers["content-length"] == str(BIG_SIZE - 1000)
    assert r.content == pattern(BIG_SIZE)[1000:]
    after = sendfile_count(client)
    assert after["bytes"] - before["bytes"] == 2 * BIG_SIZE - 1000


def test_file_wrapper_of_a_non_file_is_iterated(client: httpx.Client) -> None:
    before = sendfile_count(client)
    r = client.get("/file-wrapper-bytesio")
    assert r.content == pattern(100_000)
    assert sendfile_count(client) == before


def test_file_wrapper_head_and_pipelined(server: Proc) -> None:
    raw = exchange(
        server.port,
        b"HEAD /file-wrapper HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /file-wrapper-from HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /sized HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        timeout=30,
    )
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and f"content-length: {BIG_SIZE}".encode() in head.lower()
    head, _, rest = rest.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert rest[: BIG_SIZE - 1000] == pattern(BIG_SIZE)[1000:]
    assert rest[BIG_SIZE - 1000 :].startswith(b"HTTP/1.1 200")
