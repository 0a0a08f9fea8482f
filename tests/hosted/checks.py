"""What every hosted framework's test checks the same way: a form and a multipart
upload, a 256 MiB upload streamed through (RSS growth < 32 MiB), and a JSON POST as
a connection's last request."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator

import httpx

from tests.e2e.processes import Proc, children_of


def form_and_upload(client: httpx.Client) -> None:
    """``POST /form`` (name, age) and ``POST /upload`` (file, note) answer what came in."""
    assert client.post("/form", data={"name": "Ann", "age": "31"}).json() == {"name": "Ann", "age": 31}
    blob = bytes(range(256)) * 4000
    r = client.post("/upload", files={"file": ("blob.bin", blob)}, data={"note": "n"})
    assert r.json() == {
        "filename": "blob.bin",
        "size": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
        "note": "n",
    }


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def large_upload_is_streamed(server: Proc, client: httpx.Client, *, declared: bool) -> None:
    """256 MiB to ``POST /consume`` (chunked, or with its length when ``declared``):
    the total comes back and the worker's RSS grows by less than 32 MiB."""
    (worker,) = children_of(server.pid)
    client.post("/consume", content=b"w" * (4 << 20))  # warm up the buffers
    before = rss(worker)
    size = 256 << 20
    piece = b"u" * (1 << 20)

    def body() -> Iterator[bytes]:
        for _ in range(size // len(piece)):
            yield piece

    headers = {"Content-Length": str(size)} if declared else None
    r = client.post("/consume", content=body(), headers=headers)
    assert r.json() == {"total": size}
    assert rss(worker) - before < 32 << 20


def post_json_as_the_last_request(port: int, path: str, body: bytes, version: str, connection: str) -> bytes:
    """POSTs ``body`` as JSON on a new connection, HTTP/``version`` with the
    ``connection`` header line (or none), and returns all the server sent before it
    closed: what a stock nginx (HTTP/1.0), ``curl -0`` or urllib sends (issue 37)."""
    head = (
        f"POST {path} HTTP/{version}\r\nHost: t\r\n{connection}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer
