"""A raw WSGI app (no framework) that does what PEP 3333 allows, edge cases
included: the ``write`` callable, ``exc_info``, generators, ``close()``, errors."""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.hosted.apps import sendfile_count

Environ = dict[str, Any]
StartResponse = Callable[..., Callable[[bytes], None]]

closed: dict[str, int] = {}
lock = threading.Lock()


class Counted:
    """An iterable whose ``close()`` is counted under ``name``."""

    def __init__(self, name: str, blocks: list[bytes], fail_at: int | None = None) -> None:
        self.name = name
        self.blocks = blocks
        self.fail_at = fail_at

    def __iter__(self) -> Iterator[bytes]:
        for i, block in enumerate(self.blocks):
            if i == self.fail_at:
                raise RuntimeError("the body failed")
            yield block

    def close(self) -> None:
        with lock:
            closed[self.name] = closed.get(self.name, 0) + 1


def text(start_response: StartResponse, body: str, status: str = "200 OK") -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])
    return [data]


#: Larger than a loopback socket takes at once.
BIG_SIZE = 8 * 1024 * 1024
BIG_FILE = sendfile_count.big_file("wsgi-big", BIG_SIZE)


def file_wrapper(environ: Environ, start_response: StartResponse, path: str) -> Any:
    """``wsgi.file_wrapper`` around: the file from its start (no Content-Length),
    from an offset with its Content-Length, or a non-file (iterated)."""
    wrap = environ["wsgi.file_wrapper"]
    if path == "/file-wrapper-bytesio":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return wrap(io.BytesIO(sendfile_count.pattern(100_000)), 8192)
    fh = open(BIG_FILE, "rb")  # noqa: SIM115 - closed by the server through the wrapper
    headers = [("Content-Type", "application/octet-stream")]
    if path == "/file-wrapper-from":
        fh.seek(1000)
        headers.append(("Content-Length", str(BIG_SIZE - 1000)))
    start_response("200 OK", headers)
    return wrap(fh)


def app(environ: Environ, start_response: StartResponse) -> Any:
    path = environ["PATH_INFO"]
    if path.startswith("/environ"):
        keys = {k: v for k, v in environ.items() if isinstance(v, (str, bool, int))}
        data = json.dumps(keys).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [data]
    if path == "/echo":
        body = environ["wsgi.input"]
        lines = []
        while line := body.readline():
            lines.append(line.decode())
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(lines).encode()]
    if path == "/write":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"written ")
        write(b"then ")
        return [b"returned"]
    if path == "/exc-info":
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("changed my mind")
        except ValueError:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")], sys.exc_info())
        return [b"sorry"]
    if path == "/exc-info-late":

        def late() -> Iterator[bytes]:
            yield b"begun"
            try:
                raise ValueError("too late")
            except ValueError:
                start_response("500 Internal Server Error", [], sys.exc_info())
            yield b"never"

        start_response("200 OK", [("Content-Type", "text/plain")])
        return late()
    if path == "/generator":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Counted("generator", [b"a", b"", b"b", b"c"])
    if path == "/generator-fails":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Counted("generator-fails", [b"a", b"b"], fail_at=1)
    if path == "/sized":
        start_response("200 OK", [("Content-Length", "6")])
        return Counted("sized", [b"abc", b"def"])
    if path == "/closed":
        return text(start_response, json.dumps(closed))
    if path == "/raise":
        raise RuntimeError("boom")
    if path == "/bad-status":
        start_response("OK", [])
        return [b""]
    if path == "/bad-body":
        start_response("200 OK", [])
        return ["not bytes"]
    if path == "/no-start":
        return [b"x"]
    if path == "/errors":
        environ["wsgi.errors"].write("first line\nsecond ")
        environ["wsgi.errors"].write("line\n")
        environ["wsgi.errors"].flush()
        return text(start_response, "logged")
    if path.startswith("/file-wrapper"):
        return file_wrapper(environ, start_response, path)
    if path == "/sendfile-count":
        data = json.dumps(sendfile_count.counted).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [data]
    if path == "/sleep":
        time.sleep(float(environ["QUERY_STRING"] or "0.3"))
        return text(start_response, threading.current_thread().name)
    return text(start_response, "not found", "404 Not Found")
