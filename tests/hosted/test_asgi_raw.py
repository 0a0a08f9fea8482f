"""A raw ASGI 3 app served by ``veter run`` (a child process), driven by httpx and
by raw sockets: the scope, bodies both ways, streaming, errors and disconnects."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.processes import Proc, wait_until
from tests.hosted.apps.raw import BIG_SIZE
from tests.hosted.apps.sendfile_count import pattern
from veter.testing import _ResponseReader

APP = "tests.hosted.apps.raw:app"


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    proc = Proc(["run", APP, "--single-process", "--port", "0", "--request-timeout", "2"])
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as c:
        yield c


def events(client: httpx.Client) -> list[str]:
    result: list[str] = client.get("/events").json()
    return result


def exchange(port: int, raw: bytes, *, until: bytes | None = None, timeout: float = 5) -> bytes:
    """Sends ``raw``; reads until ``until`` is seen or the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        data = b""
        while until is None or until not in data:
            try:
                piece = sock.recv(65536)
            except TimeoutError:
                break
            if not piece:
                break
            data += piece
        return data


def test_detected_and_served(client: httpx.Client) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert r.text == "Hello, world!"
    assert r.headers["content-length"] == "13"
    assert r.headers["content-type"] == "text/plain"
    assert r.headers["x-request-id"]


def test_scope_has_every_field(server: Proc, client: httpx.Client) -> None:
    r = client.get("/scope?a=1&b=%20", headers={"X-Custom": "Value", "X-Request-ID": "given-id-1"})
    scope = r.json()
    assert scope["type"] == "http"
    assert scope["asgi"] == {"version": "3.0", "spec_version": "2.3"}
    assert scope["http_version"] == "1.1"
    assert scope["method"] == "GET"
    assert scope["scheme"] == "http"
    assert scope["path"] == "/scope"
    assert scope["raw_path"] == "/scope"
    assert scope["query_string"] == "a=1&b=%20"
    assert scope["root_path"] == ""
    assert ["x-custom", "Value"] in scope["headers"]  # names lowercased, values as sent
    assert scope["client"][0] == "127.0.0.1"
    assert scope["server"] == ["127.0.0.1", server.port]
    # The lifespan's state, and the request id (taken from the request here).
    assert scope["state"] == {"started": "yes", "request_id": "given-id-1"}
    assert r.headers["x-request-id"] == "given-id-1"


def test_path_is_decoded_raw_path_is_not(client: httpx.Client) -> None:
    scope = client.get("/scope%20x").json()
    assert scope["path"] == "/scope x"
    assert scope["raw_path"] == "/scope%20x"


def test_http10_scope(server: Proc) -> None:
    assert server.port is not None
    data = exchange(server.port, b"GET /scope HTTP/1.0\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(body)["http_version"] == "1.0"


def test_scopes_of_one_connection_follow_each_request(server: Proc) -> None:
    # From its second request a connection's scopes start from a template of its
    # own (version, scheme, client, server set): a request of another version, and
    # an app that changes its scope, must not leak into the next scope. Nor may a
    # method or query string (a GET without a query takes the template's).
    assert server.port is not None
    raw = (
        b"GET /scope HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /scope?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        b"GET /scope HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /scope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        b"GET /scope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    data = exchange(server.port, raw)
    scopes = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in data.split(b"HTTP/1.1 200")[1:]]
    assert [s["http_version"] for s in scopes] == ["1.1", "1.1", "1.1", "1.0", "1.1"]
    assert [s["method"] for s in scopes] == ["GET", "POST", "GET", "GET", "GET"]
    assert [s["query_string"] for s in scopes] == ["", "q=1", "", "", ""]
    assert all(s["client"] == scopes[0]["client"] and s["server"] == scopes[0]["server"] for s in scopes)
    assert all(s["scheme"] == "http" and s["type"] == "http" for s in scopes)


def test_body_echoed(client: httpx.Client) -> None:
    assert client.post("/echo", content=b"x" * 100_000).content == b"x" * 100_000


@pytest.mark.parametrize(
    "head",
    [
        b"POST /echo-halves HTTP/1.0\r\nContent-Length: 300000\r\n\r\n",
        b"POST /echo-halves HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 300000\r\n\r\n",
    ],
    ids=["http10", "connection-close"],
)
def test_body_of_the_last_request_is_read_whole(server: Proc, head: bytes) -> None:
    # Issue 37: on a connection's last request the app's first receive() said
    # http.disconnect; echoed in two messages, the answer held only the last one.
    body = (bytes(range(256)) * 1200)[:299_996] + b"end!"
    parsed = _ResponseReader(head_request=False).parse(exchange(server.port, head + body, timeout=10), True)
    assert parsed is not None
    answer, _ = parsed
    assert answer.status == 200
    assert answer.content == body


def test_urllib_post_is_answered(server: Proc) -> None:
    # urllib always sends `Connection: close`.
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/echo", data=b"from urllib")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.read() == b"from urllib"


def test_chunked_upload_streams_in_pieces(client: httpx.Client) -> None:
    def gen() -> Iterator[bytes]:
        for _ in range(4):
            yield b"y" * 70_000

    r = client.post("/pieces", content=gen())
    assert r.json()["total"] == 280_000


def test_large_body_arrives_in_several_messages(client: httpx.Client) -> None:
    r = client.post("/pieces", content=b"z" * 3_000_000)
    got = r.json()
    assert got["total"] == 3_000_000
    assert got["pieces"] > 1  # streamed, not collected into one message


def test_expect_100_continue(server: Proc) -> None:
    assert server.port is not None
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        interim = sock.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"hello")
        data = interim[25:]
        while not data.endswith(b"hello"):
            data += sock.recv(1024)
    assert data.startswith(b"HTTP/1.1 200 OK")


def test_streamed_answer_is_chunked(client: httpx.Client) -> None:
    r = client.get("/stream?n=50&size=1000")
    assert r.headers["transfer-encoding"] == "chunked"
    assert len(r.content) == 50_000


def test_streamed_answer_with_length(client: httpx.Client) -> None:
    r = client.get("/sized-stream")
    assert r.headers["content-length"] == "10"
    assert "transfer-encoding" not in r.headers
    assert r.content == b"0123456789"


def test_large_stream_under_backpressure(client: httpx.Client) -> None:
    with client.stream("GET", "/stream?n=400&size=65536") as r:
        total = 0
        for piece in r.iter_bytes():
            total += len(piece)
            if total < 2_000_000:
                time.sleep(0.0005)  # a slow reader at first: the app waits on the drain
    assert total == 400 * 65536


def test_pipelined_answers_keep_order(server: Proc) -> None:
    assert server.port is not None
    raw = (
        b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        b"GET /stream?n=2&size=3 HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    data = exchange(server.port, raw)
    bodies = (b"\r\n\r\nslow", b"\r\n\r\nHello, world!", b"\r\n\r\nabc", b"\r\n\r\n3\r\n000\r\n3\r\n111")
    order = [data.index(body) for body in bodies]
    assert order == sorted(order)
    assert data.count(b"HTTP/1.1 ") == 5
    assert data.endswith(b"Hello, world!")


def test_head_sends_no_body(server: Proc) -> None:
    assert server.port is not None
    data = exchange(server.port, b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 OK")
    assert b"Content-Length: 13\r\n" in data
    assert data.endswith(b"\r\n\r\n")


def test_app_connection_close_is_honoured(server: Proc) -> None:
    assert server.port is not None
    data = exchange(server.port, b"GET /close HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert data.count(b"HTTP/1.1 ") == 1
    assert b"Connection: close\r\n" in data
    assert data.endswith(b"bye")


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/boom", "boom before start"),
        ("/boom-after-start", "boom after start"),
        ("/boom-after-pause", "boom after a pause"),
        ("/no-answer", "returned without sending a response"),
        ("/wrong-length", "5 bytes but its content-length says 10"),
    ],
)
def test_app_errors_answer_500_and_are_logged(
    server: Proc, client: httpx.Client, path: str, logged: str
) -> None:
    mark = server.mark()
    r = client.get(path)
    assert r.status_code == 500
    rid = r.headers["x-request-id"]
    server.wait_for(rf"ERROR .*\[{rid}\] ASGI app failed on GET {path}: .*{logged}", start=mark)
    assert client.get("/").status_code == 200  # the worker goes on


def test_error_after_the_answer_is_logged_and_the_answer_stands(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    r = client.get("/boom-after-answer")
    assert (r.status_code, r.content) == (200, b"answered")
    rid = r.headers["x-request-id"]
    server.wait_for(
        rf"ERROR .*\[{rid}\] ASGI app failed on GET /boom-after-answer: .*boom after the answer", start=mark
    )
    assert client.get("/").status_code == 200


def test_error_mid_stream_cuts_the_connection(server: Proc) -> None:
    assert server.port is not None
    data = exchange(
        server.port, b"GET /boom-mid-stream HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert b"first piece" in data
    assert not data.endswith(b"0\r\n\r\n")  # no last chunk: the client sees it incomplete
    assert b"Hello, world!" not in data  # and nothing pipelined after it is answered
    server.wait_for(r"boom mid-stream")


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/bad-status", "ValueError: ASGI http.response.start 'status' 1000 is not an HTTP status"),
        ("/bad-header", 'ValueError: ASGI response header "x-evil" has control character 0x0d'),
        (
            "/wrong-type",
            'ValueError: ASGI message type "http.response.strat" is not one an http scope can send',
        ),
        ("/str-header", "TypeError: ASGI response header names must be bytes, got str"),
    ],
)
def test_bad_messages_raise_in_send(client: httpx.Client, path: str, error: str) -> None:
    r = client.get(path)
    assert r.status_code == 200
    assert r.text == "refused"
    assert any(e.startswith(error) for e in events(client)), events(client)


def test_send_after_the_end_raises(client: httpx.Client) -> None:
    assert client.get("/send-after-end").text == "done"
    wait_until(lambda: "RuntimeError: ASGI send() after the response was complete" in events(client), 10)


def test_disconnect_after_the_response(client: httpx.Client) -> None:
    assert client.post("/after-response", content=b"abc").text == "ok"
    wait_until(lambda: "after response: http.disconnect" in events(client), 10)


def test_disconnect_when_the_client_leaves_mid_stream(server: Proc, client: httpx.Client) -> None:
    assert server.port is not None
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /until-gone HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    wait_until(lambda: "until gone: http.disconnect" in events(client), 10)


def test_disconnect_while_waiting(server: Proc, client: httpx.Client) -> None:
    assert server.port is not None
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /wait-gone HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        time.sleep(0.1)  # the app reads the body and waits: then the client leaves
    wait_until(lambda: "wait gone: http.disconnect" in events(client), 10)


def test_deadline_answers_504_and_cancels(server: Proc, client: httpx.Client) -> None:
    # --request-timeout 2: /wait-gone never answers while the client stays.
    start = time.monotonic()
    r = client.post("/wait-gone", content=b"x")
    assert r.status_code == 504
    assert 1.5 < time.monotonic() - start < 6


def test_chunked_body_over_the_limit_is_413(server: Proc, client: httpx.Client) -> None:
    # Its length unknown at the head, the limit is met while the app reads it: the
    # server answers 413 (not the app, which would make it a 500) and the app's
    # receive() says the client has gone.
    assert server.port is not None
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /pieces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"100000\r\n" + b"c" * 0x100000 + b"\r\n"
        data = b""
        try:
            for _ in range(12):  # 12 MiB > the 10 MiB default
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    assert data.startswith(b"HTTP/1.1 413")
    # The rest of the body is never read: the answer says the connection ends, or a
    # client would send its next request on it (httpx did, and lost it).
    assert b"\r\nConnection: close\r\n" in data.split(b"\r\n\r\n")[0] + b"\r\n", data
    wait_until(lambda: any(e.startswith("pieces: disconnect after") for e in events(client)), 10)


def test_declared_body_over_the_limit_never_reaches_the_app(server: Proc) -> None:
    assert server.port is not None
    data = exchange(server.port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 413")


def test_ipv6_scope_addresses_are_pairs() -> None:
    proc = Proc(["run", APP, "--single-process", "--host", "::1", "--port", "0"])
    try:
        port = int(proc.wait_for(r"veter serving on http://\[::1\]:(\d+)").group(1))
        with httpx.Client(base_url=f"http://[::1]:{port}", timeout=10) as c:
            scope = c.get("/scope").json()
        assert scope["client"][0] == "::1" and len(scope["client"]) == 2
        assert scope["server"] == ["::1", port]
    finally:
        proc.close()


def test_lag_monitor_names_the_blocking_request(server: Proc, client: httpx.Client) -> None:
    mark = server.mark()
    assert client.get("/block").text == "blocked"
    server.wait_for(r"event loop blocked for more than \d+ ms by route GET /block;", start=mark)


def test_pathsend(client: httpx.Client) -> None:
    r = client.get("/pathsend")
    assert r.text == "from a file\n" * 1000
    assert r.headers["content-length"] == str(12 * 1000)
    for path, problem in [
        ("/pathsend-relative", "'path' must be absolute, got \"x.txt\""),
        ("/pathsend-missing", "No such file or directory"),
    ]:
        assert client.get(path).status_code == 500
        assert any(e.startswith("pathsend:") and problem in e for e in events(client)), events(client)


def sendfile_count(client: httpx.Client) -> dict[str, int]:
    result: dict[str, int] = client.get("/sendfile-count").json()
    return result


def test_pathsend_goes_out_with_sendfile(client: httpx.Client) -> None:
    before = sendfile_count(client)
    r = client.get("/pathsend-big")
    assert r.status_code == 200
    assert r.headers["content-length"] == str(BIG_SIZE)
    assert r.content == pattern(BIG_SIZE)
    after = sendfile_count(client)
    # Every byte of the body went out with sendfile (none through the process).
    assert after["bytes"] - before["bytes"] == BIG_SIZE
    assert after["calls"] > before["calls"]


def test_pathsend_over_tls_is_read_through_the_process(tmp_path: Path) -> None:
    # TLS encrypts in the process: no sendfile, the same bytes.
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    proc = Proc(
        [
            "run",
            APP,
            "--single-process",
            "--port",
            "0",
            "--ssl-certfile",
            str(cert),
            "--ssl-keyfile",
            str(key),
        ]
    )
    try:
        proc.wait_ready()
        with httpx.Client(
            base_url=f"https://127.0.0.1:{proc.port}", verify=ssl.create_default_context(cafile=str(cert))
        ) as c:
            r = c.get("/pathsend-big")
            assert r.content == pattern(BIG_SIZE)
            assert sendfile_count(c) == {"calls": 0, "bytes": 0}
    finally:
        proc.close()


def test_pathsend_head_sends_no_body(server: Proc, client: httpx.Client) -> None:
    before = sendfile_count(client)
    raw = exchange(
        server.port,
        b"HEAD /pathsend-big HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
        until=b"Hello, world!",
    )
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert f"content-length: {BIG_SIZE}".encode() in head.lower()
    assert rest.startswith(b"HTTP/1.1 200")  # the next answer, right after the head
    assert sendfile_count(client) == before


def test_pathsend_pipelined_between_other_answers(server: Proc) -> None:
    one = b"GET /pathsend-big HTTP/1.1\r\nHost: x\r\n\r\n"
    hello = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    raw = exchange(
        server.port, hello + one + one + hello + b"GET /close HTTP/1.1\r\nHost: x\r\n\r\n", timeout=30
    )
    body = pattern(BIG_SIZE)
    answers = []
    while raw:
        head, _, raw = raw.partition(b"\r\n\r\n")
        length = int(
            next(
                v
                for k, v in (h.split(b": ", 1) for h in head.split(b"\r\n")[1:])
                if k.lower() == b"content-length"
            )
        )
        answers.append(raw[:length])
        raw = raw[length:]
    assert answers[0] == b"Hello, world!"
    assert answers[1] == body
    assert answers[2] == body
    assert answers[3] == b"Hello, world!"
    assert len(answers) == 5


def test_pathsend_to_a_slow_reader(server: Proc) -> None:
    # A small receive buffer and a reader that takes its time: the sender finds the
    # socket full again and again and waits for it (add_writer on its duplicate).
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(b"GET /pathsend-big HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        pauses = 0
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < BIG_SIZE:
            piece = sock.recv(256 * 1024)
            assert piece, "the server closed the connection"
            data += piece
            if pauses < 20 and len(data) > pauses * (BIG_SIZE // 20):
                pauses += 1
                time.sleep(0.02)  # a slow client: the server's socket fills up meanwhile
        assert data.partition(b"\r\n\r\n")[2] == pattern(BIG_SIZE)


def test_pathsend_client_leaves_mid_file(server: Proc, client: httpx.Client) -> None:
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"GET /pathsend-big HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        # (closed with a reset, most of the file unread)
    assert client.get("/").text == "Hello, world!"
    assert client.get("/pathsend").status_code == 200


def test_pathsend_drops_a_client_that_stops_reading() -> None:
    proc = Proc(["run", APP, "--single-process", "--port", "0", "--write-timeout", "1"])
    try:
        proc.wait_ready()
        with socket.create_connection(("127.0.0.1", proc.port), timeout=10) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            sock.sendall(b"GET /pathsend-big HTTP/1.1\r\nHost: x\r\n\r\n")
            # Reads nothing until the server must have given up (write timeout 1 s).
            time.sleep(3)
            data = b""
            while piece := sock.recv(1 << 20):
                data += piece
        body = data.partition(b"\r\n\r\n")[2]
        assert 0 < len(body) < BIG_SIZE  # cut, then closed (recv returned b"")
        assert body == pattern(BIG_SIZE)[: len(body)]
        with httpx.Client(base_url=f"http://127.0.0.1:{proc.port}") as c:
            assert c.get("/").text == "Hello, world!"
    finally:
        proc.close()
