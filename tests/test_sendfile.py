"""``veter.sendfile``: a file's bytes sent past the transport. Its rules, against a
writer that plays the core's part, and ``FileResponse`` on a real connection (the
hosted apps' pathsend and file_wrapper are tested in tests/hosted)."""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import veter
from tests.e2e.conftest import RunningServer, _warm_process_globals, serve  # noqa: F401 - fixtures
from veter import sendfile
from veter.middleware.compression import compress

SIZE = 6 * 1024 * 1024
DATA = (bytes(range(251)) * (SIZE // 251 + 1))[:SIZE]


class Writer:
    """Answers ``_sendfile_socket`` with ``claims`` in turn; records what is called."""

    def __init__(self, *claims: tuple[int, float, int] | None) -> None:
        self.claims = list(claims)
        self.ended: list[bool] = []
        self.sent: list[int] = []

    def _sendfile_socket(self) -> tuple[int, float, int] | None:
        return self.claims.pop(0)

    def _sent_out_of_band(self, n: int) -> None:
        self.sent.append(n)

    def end(self, ok: bool) -> None:
        self.ended.append(ok)


def transmit(writer: Writer, count: int = 10) -> bool:
    return asyncio.run(sendfile.transmit(writer, 0, 0, count))


def test_not_possible_sends_nothing() -> None:
    writer = Writer(None)
    assert transmit(writer) is False
    assert writer.ended == [] and writer.sent == []


def test_transport_busy_is_asked_again_once() -> None:
    writer = Writer((-1, 30.0, 10), (-1, 30.0, 10))
    assert transmit(writer) is False
    assert writer.claims == []


def test_no_body_to_send_is_done() -> None:
    writer = Writer((-2, 0.0, 0))
    assert transmit(writer) is True
    assert writer.ended == [] and writer.sent == []


def test_more_than_announced_cuts_the_answer() -> None:
    writer = Writer((5, 30.0, 9))
    assert transmit(writer, count=10) is True
    assert writer.ended == [False] and writer.sent == []


def test_the_bytes_and_the_count(tmp_path: Path) -> None:
    source = tmp_path / "data.bin"
    source.write_bytes(DATA)
    left, right = socket.socketpair()
    left.setblocking(False)
    received = bytearray()

    writer = Writer((left.fileno(), 5.0, SIZE - 100))

    async def main(fd: int) -> bool:
        def read() -> None:
            while len(received) < SIZE - 100:
                received.extend(right.recv(1 << 20))

        # The reader runs beside: the socket fills up and the sender waits for it.
        reading = asyncio.get_running_loop().run_in_executor(None, read)
        done = await sendfile.transmit(writer, fd, 100, SIZE - 100)
        await reading
        return done

    try:
        with open(source, "rb") as fh:
            assert asyncio.run(main(fh.fileno())) is True
    finally:
        left.close()
        right.close()
    assert sum(writer.sent) == SIZE - 100 and writer.ended == []
    assert bytes(received) == DATA[100:]


def test_a_shorter_file_cuts_the_answer(tmp_path: Path) -> None:
    source = tmp_path / "short.bin"
    source.write_bytes(b"x" * 1000)
    left, right = socket.socketpair()
    left.setblocking(False)
    try:
        with open(source, "rb") as fh:
            writer = Writer((left.fileno(), 5.0, 2000))
            assert asyncio.run(sendfile.transmit(writer, fh.fileno(), 0, 2000)) is True
        assert writer.sent == [1000] and writer.ended == [False]
    finally:
        left.close()
        right.close()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"calls": 0, "bytes": 0}
    real = os.sendfile

    def counting(out_fd: int, in_fd: int, offset: Any, count: int) -> int:
        n = real(out_fd, in_fd, offset, count)
        seen["calls"] += 1
        seen["bytes"] += n
        return n

    monkeypatch.setattr(os, "sendfile", counting)
    return seen


def file_app(path: Path) -> veter.App:
    app = veter.App()

    @app.get("/file")
    def whole(request: veter.Request) -> Any:
        return veter.FileResponse(path, request)

    return app


def fetch(port: int, raw: bytes) -> list[tuple[bytes, bytes]]:
    """Sends ``raw`` (its last request says Connection: close); the answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        data = b""
        while piece := sock.recv(1 << 20):
            data += piece
    answers = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
        length = 0 if head.startswith(b"HTTP/1.1 304") or b"HEAD" in head else int(fields[b"content-length"])
        answers.append((head, data[:length]))
        data = data[length:]
    return answers


def test_file_response_goes_out_with_sendfile(
    serve: Callable[..., RunningServer],  # noqa: F811 - the fixture
    counted: dict[str, int],
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(DATA)
    running = serve(file_app(path))
    answers = fetch(
        running.port,
        b"GET /file HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /file HTTP/1.1\r\nHost: x\r\nRange: bytes=1000-1999999\r\n\r\n"
        b"GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    assert [a[0].split(b"\r\n")[0] for a in answers] == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 206 Partial Content",
        b"HTTP/1.1 404 Not Found",
    ]
    assert answers[0][1] == DATA
    assert answers[1][1] == DATA[1000:2000000]
    assert counted["bytes"] == SIZE + 1999000


def test_compressed_file_response_is_read_through_the_process(
    serve: Callable[..., RunningServer],  # noqa: F811 - the fixture
    counted: dict[str, int],
    tmp_path: Path,
) -> None:
    path = tmp_path / "page.txt"
    text = b"compress me, " * 100_000
    path.write_bytes(text)
    app = file_app(path)
    app.middleware(compress())
    running = serve(app)
    with socket.create_connection(("127.0.0.1", running.port), timeout=30) as sock:
        sock.sendall(b"GET /file HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n")
        data = b""
        while piece := sock.recv(1 << 20):
            data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-encoding: gzip" in head.lower()
    assert b"transfer-encoding: chunked" in head.lower()
    chunks, rest = [], body
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    assert gzip.decompress(b"".join(chunks)) == text
    assert counted == {"calls": 0, "bytes": 0}
