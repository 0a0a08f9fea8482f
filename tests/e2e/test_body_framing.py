"""Request bodies on every front end, in every dialect clients speak.

The matrix of issue 37: HTTP/1.0 and 1.1; keep-alive and close; no body,
``Content-Length``, chunked, ``Expect: 100-continue``; bodies of 0 bytes, a few, one
that crosses a read boundary and one above the streamed body's pause watermark
(``body_stream.rs``: 1 MiB); the app reading all, part or none of it; sized and
streamed answers; on a ``veter.App`` (a collected body and a ``stream_body`` route),
a hosted ASGI app and a hosted WSGI app (tests/e2e/apps/framing.py), each served by
``veter run`` over a real socket.

For every case the client checks what the app read (length and hash of a prefix of
what was sent, and whether it saw the end), the answer's framing (chunked only for
HTTP/1.1, a length or the close for HTTP/1.0), and the connection: an answer that
does not say it closes must leave the connection usable (a second request is
answered on it), and one that says so must close. A body on a connection's last
request (HTTP/1.0, ``Connection: close``: what a stock nginx sends upstream) was
lost by hosted apps before 2026-11 (issue 37): this is the test that would have
caught it.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.e2e.apps.framing import PART
from veter.testing import TestResponse, _ResponseReader

from .processes import Proc

#: front end -> (app reference, path)
FRONT_ENDS = {
    "native-collected": ("tests.e2e.apps.framing:native", "/collected"),
    "native-streamed": ("tests.e2e.apps.framing:native", "/streamed"),
    "asgi": ("tests.e2e.apps.framing:asgi", "/"),
    "wsgi": ("tests.e2e.apps.framing:wsgi", "/"),
}

#: How the connection is asked to behave: (request version, Connection header).
DIALECTS = {
    "1.1-keep-alive": ("1.1", None),
    "1.1-close": ("1.1", "close"),
    "1.0": ("1.0", None),
    "1.0-keep-alive": ("1.0", "keep-alive"),
}

FRAMINGS = ["none", "length", "chunked", "expect"]
#: 0, a few bytes, across a read boundary, above the pause watermark.
SIZES = [0, 100, 70_000, 1_500_000]
READS = ["all", "part", "none"]
ANSWERS = ["sized", "streamed"]

#: How long the client waits for any answer or close (the server answers in ms).
TIMEOUT = 5.0

SUMMARY = re.compile(rb"v=(1\.[01]) n=(\d+) sha=([0-9a-f]{64}) end=(whole|more|disconnect)")


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, int]]:
    procs: dict[str, Proc] = {}
    try:
        for ref in sorted({ref for ref, _ in FRONT_ENDS.values()}):
            procs[ref] = Proc(["run", ref, "--port", "0", "--workers", "1", "--access-log", "off"])
        ports = {ref: proc.wait_ready() for ref, proc in procs.items()}
        yield ports
    finally:
        for proc in procs.values():
            proc.close()
    for proc in procs.values():
        assert "Traceback" not in proc.output(), proc.output()


@dataclass(frozen=True)
class Case:
    front: str
    dialect: str
    framing: str
    size: int
    read: str
    answer: str

    @property
    def version(self) -> str:
        return DIALECTS[self.dialect][0]

    @property
    def keep_alive(self) -> bool:
        version, connection = DIALECTS[self.dialect]
        return connection == "keep-alive" if version == "1.0" else connection != "close"

    def body(self) -> bytes:
        # Not one repeated byte: a piece lost or moved changes the hash.
        return (hashlib.sha256(str(self.size).encode()).digest() * (self.size // 32 + 1))[: self.size]

    def head(self, path: str) -> bytes:
        version, connection = DIALECTS[self.dialect]
        lines = [f"POST {path}?read={self.read}&answer={self.answer} HTTP/{version}", "Host: t"]
        if connection:
            lines.append(f"Connection: {connection}")
        if self.framing in ("length", "expect"):
            lines.append(f"Content-Length: {self.size}")
        if self.framing == "expect":
            lines.append("Expect: 100-continue")
        if self.framing == "chunked":
            lines.append("Transfer-Encoding: chunked")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def encoded_body(self) -> bytes:
        body = self.body()
        if self.framing != "chunked":
            return body
        # Pieces of uneven sizes, one of them crossing 64 KiB.
        out = b""
        for start, end in itertools.pairwise([0, *range(1, len(body), 65_000), len(body)]):
            if end > start:
                out += b"%x\r\n%s\r\n" % (end - start, body[start:end])
        return out + b"0\r\n\r\n"


def cases() -> Iterator[Case]:
    for front, dialect, framing, size, read, answer in itertools.product(
        FRONT_ENDS, DIALECTS, FRAMINGS, SIZES, READS, ANSWERS
    ):
        if framing == "none" and size:
            continue  # no framing header: no body
        yield Case(front, dialect, framing, size, read, answer)


def send_body(sock: socket.socket, data: bytes, failures: list[BaseException]) -> threading.Thread:
    """Sends ``data`` from a thread: a server that answers without reading it all may
    stop reading, and the answer must still be read meanwhile."""

    def run() -> None:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed after answering without reading it all
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def run_case(port: int, case: Case) -> list[str]:
    """Sends ``case`` on a new connection and returns what was wrong (nothing: [])."""
    path = FRONT_ENDS[case.front][1]
    problems: list[str] = []
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    failures: list[BaseException] = []
    try:
        head, body = case.head(path), case.encoded_body()
        sender = None
        if case.framing == "expect" and case.version == "1.1" and body:
            sock.sendall(head)
            early = read_interim(sock)
            if early is None:
                sender = send_body(sock, body, failures)
                answers, closed = read_answer(sock)
            else:
                # A final answer instead: the body is not sent (as clients do).
                answers, closed = read_answer(sock, early)
        else:
            sender = send_body(sock, head + body, failures)
            answers, closed = read_answer(sock)
        if sender is not None:
            sender.join(TIMEOUT)
        problems += [f"sending failed: {exc!r}" for exc in failures]
        if not answers:
            return [*problems, "no answer"]
        answer = answers[0]
        if case.framing == "chunked" and case.version == "1.0":
            # Transfer-Encoding means nothing to HTTP/1.0: refused (docs/security.md).
            if answer.status != 400:
                problems.append(f"HTTP/1.0 chunked answered {answer.status}, not 400")
            return problems
        problems += check_answer(case, answer)
        said_close = "close" in answer.headers.get("connection", "").lower()
        if case.version == "1.0" and "keep-alive" not in answer.headers.get("connection", "").lower():
            said_close = True
        if not case.keep_alive and not said_close:
            problems.append("the answer to a closing request did not say it closes")
        if said_close:
            if not closed and wait_for_close(sock):
                closed = True
            if not closed:
                problems.append("the answer said close, the connection stayed open")
        else:
            problems += follow_up(sock, case, path)
    finally:
        sock.close()
    return problems


def check_answer(case: Case, answer: TestResponse) -> list[str]:
    """What is wrong with the answer to ``case`` (what the app read, its framing)."""
    problems = []
    status, content, headers = answer.status, answer.content, answer.headers
    if status != 200:
        return [f"status {status}: {content[:200]!r}"]
    match = SUMMARY.fullmatch(content)
    if match is None:
        return [f"answer {content[:200]!r}"]
    version, n, digest, end = match.group(1).decode(), int(match.group(2)), match.group(3), match.group(4)
    sent = case.body()
    if version != case.version:
        problems.append(f"the app saw HTTP/{version}")
    if hashlib.sha256(sent[:n]).hexdigest().encode() != digest:
        problems.append(f"the {n} bytes read are not the body's first {n}")
    if end == b"disconnect":
        problems.append(f"the app saw the client leave after {n} of {case.size} bytes")
    if case.read == "all" and (n != case.size or end != b"whole"):
        problems.append(f"read all: {n} of {case.size} bytes, end={end.decode()}")
    if case.read == "part" and case.size and not 0 < n <= case.size:
        problems.append(f"read part: {n} of {case.size} bytes")
    if case.read == "part" and case.front in ("native-collected", "wsgi") and n != min(case.size, PART):
        problems.append(f"read part: {n} bytes, not {min(case.size, PART)}")
    if case.read == "none" and n:
        problems.append(f"read none: {n} bytes")
    encoding = headers.get("transfer-encoding", "")
    if case.version == "1.0" and encoding:
        problems.append(f"Transfer-Encoding {encoding} in an answer to HTTP/1.0")
    if case.version == "1.1" and case.answer == "streamed" and encoding != "chunked":
        problems.append("a streamed answer to HTTP/1.1 not chunked")
    if case.answer == "sized" and headers.get("content-length") != str(len(content)):
        problems.append("a sized answer without its Content-Length")
    return problems


def read_interim(sock: socket.socket) -> bytes | None:
    """Reads a ``100 Continue`` (None), or the start of a final answer (its bytes,
    with or without a ``100 Continue`` before it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    if data.startswith(b"HTTP/1.1 100 "):
        # A final answer may follow at once (an app that does not read the body).
        rest = data.split(b"\r\n\r\n", 1)[1]
        return rest or None
    return data


def read_answer(sock: socket.socket, data: bytes = b"") -> tuple[list[TestResponse], bool]:
    """One answer (none if the server closed first), and whether the server closed."""
    closed = False
    while True:
        parsed = _ResponseReader(head_request=False).parse(data, closed)
        if parsed is not None:
            return [parsed[0]], closed
        if closed:
            return [], True
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        closed = not chunk
        data += chunk


def wait_for_close(sock: socket.socket) -> bool:
    """Whether the server closes the connection (within the socket's timeout)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def follow_up(sock: socket.socket, case: Case, path: str) -> list[str]:
    """The connection stayed open: a second request on it is answered."""
    connection = "\r\nConnection: keep-alive" if case.version == "1.0" else ""
    sock.sendall(f"GET {path}?read=all HTTP/{case.version}\r\nHost: t{connection}\r\n\r\n".encode())
    answers, _ = read_answer(sock)
    if not answers:
        return ["the connection stayed open but a second request got no answer"]
    second = answers[0]
    expected = f"v={case.version} n=0 sha={hashlib.sha256(b'').hexdigest()} end=whole".encode()
    if (second.status, second.content) != (200, expected):
        return [f"second request on the connection: {second.status} {second.content[:200]!r}"]
    return []


@pytest.mark.parametrize("front", list(FRONT_ENDS))
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_every_body_reaches_every_front_end(servers: dict[str, int], front: str, dialect: str) -> None:
    port = servers[FRONT_ENDS[front][0]]
    failed = []
    for case in cases():
        if (case.front, case.dialect) != (front, dialect):
            continue
        try:
            problems = run_case(port, case)
        except TimeoutError:
            problems = ["timed out waiting for the server"]
        if problems:
            failed.append(f"{case}: {'; '.join(problems)}")
    assert not failed, f"{len(failed)} case(s) failed:\n" + "\n".join(failed)


@pytest.mark.parametrize("front", list(FRONT_ENDS))
def test_an_answer_ended_by_closing_is_the_last(servers: dict[str, int], front: str) -> None:
    # A streamed answer to HTTP/1.0 (kept alive) has no length: the close ends it,
    # so nothing may follow it, not even the answer to a request pipelined behind.
    ref, path = FRONT_ENDS[front]
    with socket.create_connection(("127.0.0.1", servers[ref]), timeout=TIMEOUT) as sock:
        sock.sendall(
            f"POST {path}?answer=streamed HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab"
            f"GET {path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Connection: close" in head
    assert SUMMARY.fullmatch(body), body
