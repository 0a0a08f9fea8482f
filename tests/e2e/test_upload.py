"""Request bodies as a stream (stream_body=True): large uploads in bounded memory,
backpressure, limits, early answers, clients that leave, pipelining after a body."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable

import veter

from .conftest import RunningServer, read_responses, wait_closed

Serve = Callable[..., RunningServer]
MiB = 1 << 20


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Seen:
    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.release = threading.Event()
        self.started = threading.Event()
        self.done = threading.Event()


def upload_app(seen: Seen) -> veter.App:
    app = veter.App()

    @app.post("/sha", stream_body=True)
    async def sha(request: veter.Request) -> dict[str, object]:
        digest, size = hashlib.sha256(), 0
        async for chunk in request.stream():
            digest.update(chunk)
            size += len(chunk)
        return {"bytes": size, "sha256": digest.hexdigest()}

    @app.post("/held", stream_body=True)
    async def held(request: veter.Request) -> dict[str, int]:
        seen.started.set()
        await asyncio.to_thread(seen.release.wait)  # set by the test thread
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
        return {"bytes": size}

    @app.post("/watch", stream_body=True)
    async def watch(request: veter.Request) -> str:
        try:
            async for _ in request.stream():
                seen.started.set()
        except Exception as exc:
            seen.errors.append(exc)
            raise
        finally:
            seen.done.set()
        return "whole"

    @app.post("/early", stream_body=True)
    async def early(request: veter.Request) -> str:
        return "no thanks"

    @app.post("/misuse", stream_body=True)
    async def misuse(request: veter.Request) -> bytes:
        return await request.body()

    @app.post("/plain")
    async def plain(request: veter.Request) -> dict[str, int]:
        pieces = [chunk async for chunk in request.stream()]
        return {"pieces": len(pieces), "bytes": sum(map(len, pieces))}

    @app.get("/next")
    def after(request: veter.Request) -> str:
        return "next"

    return app


def pattern(n: int) -> bytes:
    return (b"0123456789abcdef" * (n // 16 + 1))[:n]


def test_large_upload_in_bounded_memory(serve: Serve) -> None:
    server = serve(upload_app(Seen()), max_body_bytes=1 << 30)
    total, piece = 256 * MiB, pattern(MiB)
    digest = hashlib.sha256()
    before = rss()
    peak = before
    with server.connect(timeout=60) as sock:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % total)
        for _ in range(total // MiB):
            sock.sendall(piece)
            digest.update(piece)
            peak = max(peak, rss())
        (answer,), _ = read_responses(sock, 1, timeout=60)
    assert answer.json() == {"bytes": total, "sha256": digest.hexdigest()}
    assert peak - before < 32 * MiB, f"RSS grew by {(peak - before) // MiB} MiB"


def test_chunked_upload_and_pipelining_after_it(serve: Serve) -> None:
    server = serve(upload_app(Seen()))
    body = pattern(300_000)
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 7000]), body[i : i + 7000]) for i in range(0, len(body), 7000)
    )
    with server.connect() as sock:
        sock.sendall(
            b"POST /sha HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n"
            b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        (first, second), closed = read_responses(sock, 2)
    assert first.json() == {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    assert second.content == b"next" and not closed


def test_a_slow_reader_stops_the_socket_being_read(serve: Serve) -> None:
    seen = Seen()
    server = serve(upload_app(seen), max_body_bytes=1 << 30)
    total = 64 * MiB
    with server.connect(timeout=30) as sock:
        sock.sendall(b"POST /held HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % total)
        assert seen.started.wait(10)
        sock.settimeout(0.5)
        sent, piece = 0, pattern(64 * 1024)
        try:
            while sent < total:
                sent += sock.send(piece)
        except TimeoutError:
            pass
        # The handler reads nothing yet: the server stops reading after ~1 MiB, so
        # only the kernel's socket buffers take more.
        assert sent < 24 * MiB, f"the client could send {sent // MiB} MiB to a handler reading nothing"
        seen.release.set()
        sock.settimeout(30)
        while sent < total:
            sent += sock.send(pattern(min(MiB, total - sent)))
        (answer,), _ = read_responses(sock, 1, timeout=30)
    assert answer.json() == {"bytes": total}


def test_limits_still_apply(serve: Serve) -> None:
    server = serve(upload_app(Seen()), max_body_bytes=100_000)
    with server.connect() as sock:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: t\r\nContent-Length: 100001\r\n\r\n")
        (answer,), _ = read_responses(sock, 1)
    assert answer.status == 413
    with server.connect() as sock:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(20):
                sock.sendall(b"2000\r\n" + pattern(0x2000) + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered 413 and closed while the rest was still coming
        (answer,), _ = read_responses(sock, 1)
        assert answer.status == 413
        wait_closed(sock)
    with server.connect() as sock:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        (answer,), _ = read_responses(sock, 1)
        assert answer.status == 400


def test_an_early_answer_closes_and_misuse_is_explained(serve: Serve) -> None:
    server = serve(upload_app(Seen()))
    with server.connect() as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n" + pattern(1000))
        (answer,), _ = read_responses(sock, 1)
        assert answer.content == b"no thanks" and answer.headers["connection"] == "close"
        wait_closed(sock)
    with server.connect() as sock:
        sock.sendall(b"POST /misuse HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        (answer,), _ = read_responses(sock, 1)
    assert answer.status == 500


def test_the_handler_learns_the_client_left(serve: Serve) -> None:
    seen = Seen()
    server = serve(upload_app(seen))
    sock = server.connect()
    sock.sendall(b"POST /watch HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + pattern(5000))
    assert seen.started.wait(10)
    sock.close()
    assert seen.done.wait(10)
    assert [type(e) for e in seen.errors] == [ConnectionResetError]


def test_body_timeout_while_streaming(serve: Serve) -> None:
    seen = Seen()
    server = serve(upload_app(seen), body_timeout=0.3)
    with server.connect() as sock:
        sock.sendall(b"POST /watch HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + pattern(10))
        start = time.monotonic()
        (answer,), _ = read_responses(sock, 1, timeout=10)
    assert answer.status == 408 and time.monotonic() - start < 5


def test_stream_on_an_ordinary_route_gives_the_whole_body(serve: Serve) -> None:
    server = serve(upload_app(Seen()))
    with server.connect() as sock:
        sock.sendall(b"POST /plain HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
        (answer,), _ = read_responses(sock, 1)
    assert answer.json() == {"pieces": 1, "bytes": 5}


def form_app() -> veter.App:
    app = veter.App()

    @app.post("/file")
    async def file(upload: veter.UploadFile) -> dict[str, object]:
        digest, size = hashlib.sha256(), 0
        while chunk := await upload.read(MiB):
            digest.update(chunk)
            size += len(chunk)
        return {
            "name": upload.filename,
            "bytes": size,
            "sha256": digest.hexdigest(),
            "disk": not upload.in_memory,
        }

    @app.post("/fails")
    async def fails(upload: veter.UploadFile) -> str:
        raise veter.HTTPException(507, "no room for it")

    return app


def test_multipart_upload_spools_to_disk_in_bounded_memory(serve: Serve) -> None:
    # A typed UploadFile route reads its body as it arrives: 64 MiB through the
    # multipart parser to a temporary file, the server's memory growing by little;
    # the file is closed after the answer (the fixture fails on a leaked descriptor).
    server = serve(form_app(), max_body_bytes=1 << 30)
    total, piece = 64 * MiB, pattern(MiB)
    head = b'--XyZ\r\nContent-Disposition: form-data; name="upload"; filename="big.bin"\r\n\r\n'
    tail = b"\r\n--XyZ--\r\n"
    digest = hashlib.sha256()
    for path, expected in (("/file", 200), ("/fails", 507)):
        before = rss()
        peak = before
        with server.connect(timeout=60) as sock:
            sock.sendall(
                b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
                b"Content-Length: %d\r\n\r\n" % (path.encode(), len(head) + total + len(tail)) + head
            )
            for _ in range(total // MiB):
                sock.sendall(piece)
                if path == "/file":
                    digest.update(piece)
                peak = max(peak, rss())
            sock.sendall(tail)
            (answer,), _ = read_responses(sock, 1, timeout=60)
        assert answer.status == expected
        assert peak - before < 32 * MiB, f"RSS grew by {(peak - before) // MiB} MiB"
        if path == "/file":
            assert answer.json() == {
                "name": "big.bin",
                "bytes": total,
                "sha256": digest.hexdigest(),
                "disk": True,
            }
