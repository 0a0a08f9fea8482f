"""The fuzzer's client: a raw socket that writes a case's bytes (whole, cut at
given points, or a byte at a time), optionally half-closes, and reads the answers
with a strict reader of its own (any framing error is recorded, not repaired)."""

from __future__ import annotations

import hashlib
import itertools
import socket
import threading
import time
from dataclasses import dataclass, field

from tests.hosted.fuzz.cases import Case

# Bytes sent one per send() in "bytewise" delivery; the rest goes in big pieces,
# so a 1 MB body costs no million syscalls.
BYTEWISE_PREFIX = 2048
READ_SIZE = 65536
# Asked on a connection that should still be open once every answer is in.
OPEN_CHECK = b"GET /open-check?id=open-check HTTP/1.1\r\nHost: fuzz\r\n\r\n"


@dataclass
class Answer:
    status: int
    version: str
    headers: list[tuple[str, str]]  # names lowercased, in order
    framing: str  # "length", "chunked", "close" or "none"
    body_len: int = 0
    body_sha: str = ""
    interim: list[int] = field(default_factory=list)
    defect: str | None = None  # how the answer broke the framing rules

    def header(self, name: str) -> str | None:
        for n, v in self.headers:
            if n == name:
                return v
        return None


@dataclass
class Exchange:
    """What the client got on one connection."""

    answers: list[Answer]
    # "eof", "reset", "timeout", "garbage" (bytes that are no answer) or "open" (a
    # further request on the connection was answered)
    end: str
    leftover: bytes = b""  # the start of what follows the last whole answer (an incomplete one)


class Incomplete(Exception):
    """More bytes are needed."""


class Reader:
    """Parses answers from a growing buffer, strictly (RFC 9112 6.3 for framing)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.eof = False

    def _line(self, pos: int) -> tuple[bytes, int]:
        end = self.buf.find(b"\r\n", pos)
        if end < 0:
            raise Incomplete
        return bytes(self.buf[pos:end]), end + 2

    def parse(self, method: str, request_version: str) -> Answer | None:
        """One answer (interim ones folded into it), or None for more bytes. The
        buffer is consumed only when a whole answer is parsed."""
        pos = 0
        interim: list[int] = []
        try:
            while True:
                line, pos = self._line(pos)
                version, status, _ = (line.decode("latin-1") + " ").split(" ", 2)
                headers: list[tuple[str, str]] = []
                while True:
                    line, pos = self._line(pos)
                    if not line:
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers.append((name.lower(), value.strip(" \t")))
                code = int(status)
                if 100 <= code < 200:
                    interim.append(code)
                    continue
                answer = Answer(code, version, headers, "none", interim=interim)
                pos = self._body(answer, pos, method, request_version)
                del self.buf[:pos]
                return answer
        except Incomplete:
            return None

    def _body(self, answer: Answer, pos: int, method: str, request_version: str) -> int:
        te = answer.header("transfer-encoding")
        cl = answer.header("content-length")
        if method == "HEAD" or answer.status in (204, 304):
            return pos
        body = bytearray()
        if te is not None:
            answer.framing = "chunked"
            if request_version == "1.0":
                answer.defect = "chunked answer to an HTTP/1.0 request"
            if cl is not None:
                answer.defect = "both Content-Length and Transfer-Encoding"
            while True:
                line, pos = self._line(pos)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while True:
                        line, pos = self._line(pos)
                        if not line:
                            break
                    break
                if len(self.buf) < pos + size + 2:
                    raise Incomplete
                body += self.buf[pos : pos + size]
                if self.buf[pos + size : pos + size + 2] != b"\r\n":
                    answer.defect = "chunk data not followed by CRLF"
                pos += size + 2
        elif cl is not None:
            answer.framing = "length"
            size = int(cl)
            if len(self.buf) < pos + size:
                raise Incomplete
            body += self.buf[pos : pos + size]
            pos += size
        else:
            answer.framing = "close"
            if not self.eof:
                raise Incomplete
            body += self.buf[pos:]
            pos = len(self.buf)
        answer.body_len = len(body)
        answer.body_sha = hashlib.sha256(body).hexdigest()[:16]
        return pos


def _write(sock: socket.socket, case: Case, data: bytes, errors: list[str]) -> None:
    try:
        if case.delivery == "whole":
            sock.sendall(data)
        elif case.delivery == "splits":
            bounds = [0, *case.cuts, len(data)]
            for a, b in itertools.pairwise(bounds):
                sock.sendall(data[a:b])
        else:
            for i in range(min(BYTEWISE_PREFIX, len(data))):
                sock.sendall(data[i : i + 1])
            sock.sendall(data[BYTEWISE_PREFIX:])
        if case.half_close:
            sock.shutdown(socket.SHUT_WR)
    except OSError as exc:
        errors.append(type(exc).__name__)


def exchange(port: int, case: Case, timeout: float) -> Exchange:
    """Sends ``case`` to ``port``; reads an answer per request, then (for a
    connection that should stay open) asks once more to see whether it did."""
    requests = case.requests
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    errors: list[str] = []
    writer = threading.Thread(target=_write, args=(sock, case, case.payload(), errors), daemon=True)
    reader = Reader()
    answers: list[Answer] = []
    deadline = time.monotonic() + timeout
    end = "timeout"
    probing = False
    with sock:
        writer.start()
        while True:
            if probing:
                method, version = "GET", "1.1"
            else:
                last = requests[min(len(answers), len(requests) - 1)]
                method, version = last.method, last.version
            try:
                answer = reader.parse(method, version)
            except ValueError:
                end = "garbage"
                break
            if answer is not None:
                if probing:
                    end = "open"
                    break
                answers.append(answer)
                if len(answers) == len(requests) and _stays_open(case, answer):
                    writer.join(max(0.0, deadline - time.monotonic()))
                    probing = True
                    try:
                        sock.sendall(OPEN_CHECK)
                    except OSError:  # the server has closed: a reset answers the write
                        end = "eof"
                        break
                continue
            if reader.eof:
                end = "eof"
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                data = sock.recv(READ_SIZE)
            except TimeoutError:
                break
            except ConnectionResetError:
                end = "reset"
                break
            if not data:
                reader.eof = True
            reader.buf += data
        writer.join(max(0.0, deadline - time.monotonic()))
    return Exchange(answers, end, bytes(reader.buf[:600]))


def _stays_open(case: Case, answer: Answer) -> bool:
    """Whether the client may expect the connection to be reusable now."""
    last = case.requests[-1]
    if case.half_close or not last.keep_alive:
        return False
    return (answer.header("connection") or "").lower() != "close" and answer.framing != "close"
