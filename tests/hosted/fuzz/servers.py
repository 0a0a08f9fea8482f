"""The servers the fuzzer compares, as child processes on free loopback ports:
veter hosting the probe apps (ASGI and WSGI), and the peers each is compared
with: uvicorn (httptools and h11) for ASGI, gunicorn (gthread) for WSGI, and
Hypercorn (h2c) for the ASGI app over HTTP/2."""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import dataclass

from tests.e2e.processes import Proc, wait_until

ASGI_APP = "tests.hosted.apps.probe_asgi:app"
WSGI_APP = "tests.hosted.apps.probe_wsgi:app"


@dataclass(frozen=True)
class Spec:
    name: str
    interface: str  # "asgi" or "wsgi"

    def command(self, port: int) -> list[str]:
        py = [sys.executable, "-m"]
        where = ["--host", "127.0.0.1", "--port", str(port)]
        if self.name == "veter-asgi":
            return [*py, "veter", "run", ASGI_APP, "--interface", "asgi", "--single-process",
                    "--access-log", "off", "--log-level", "warning", *where]  # fmt: skip
        if self.name == "veter-wsgi":
            return [*py, "veter", "run", WSGI_APP, "--interface", "wsgi", "--single-process",
                    "--access-log", "off", "--log-level", "warning", "--threads", "4", *where]  # fmt: skip
        if self.name.startswith("uvicorn"):
            http = self.name.split("-", 1)[1]
            return [*py, "uvicorn", ASGI_APP, "--http", http, "--loop", "uvloop", "--lifespan", "on",
                    "--no-access-log", "--log-level", "warning", *where]  # fmt: skip
        if self.name == "hypercorn":
            # h2c with prior knowledge on the plain port (and HTTP/1.1 for the fence);
            # one bug mended (hypercorn_h2.py).
            return [*py, "tests.hosted.fuzz.hypercorn_h2", ASGI_APP, "-b", f"127.0.0.1:{port}", "-k", "uvloop", "-w", "0",
                    "--log-level", "warning"]  # fmt: skip
        if self.name == "gunicorn-gthread":
            return [*py, "gunicorn", WSGI_APP, "-k", "gthread", "--threads", "4", "-w", "1",
                    "-b", f"127.0.0.1:{port}", "--log-level", "warning"]  # fmt: skip
        raise ValueError(f"no server called {self.name}")


VETER = {"asgi": Spec("veter-asgi", "asgi"), "wsgi": Spec("veter-wsgi", "wsgi")}
PEERS = (Spec("uvicorn-httptools", "asgi"), Spec("uvicorn-h11", "asgi"), Spec("gunicorn-gthread", "wsgi"))
# The HTTP/2 run: veter-asgi (h2c with prior knowledge is on by default) against Hypercorn.
H2_PEER = Spec("hypercorn", "asgi")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


class Server:
    """One server process, started and polled until its port accepts."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.port = free_port()
        self.proc = Proc([], command=spec.command(self.port))

    def wait_ready(self, timeout: float = 30) -> None:
        try:
            wait_until(lambda: _accepts(self.port) or self.proc.proc.poll() is not None, timeout)
        except TimeoutError:
            raise RuntimeError(f"{self.spec.name} did not start:\n{self.proc.output()}") from None
        if self.proc.proc.poll() is not None:
            raise RuntimeError(f"{self.spec.name} exited:\n{self.proc.output()}")

    def fence(self, timeout: float = 10) -> tuple[list[dict[str, object]], list[str]]:
        """The app's records since the last fence, once no other call runs, and
        the ids of calls still running after the app's wait."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(b"GET /fence HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{self.spec.name}: the fence failed: {data[:300]!r}")
        out = json.loads(body)
        return out["records"], out["running"]

    def alive(self) -> bool:
        return self.proc.proc.poll() is None

    def close(self) -> None:
        self.proc.close()


def start(specs: list[Spec]) -> dict[str, Server]:
    servers = {spec.name: Server(spec) for spec in specs}
    try:
        for server in servers.values():
            server.wait_ready()
    except BaseException:
        for server in servers.values():
            server.close()
        raise
    return servers
