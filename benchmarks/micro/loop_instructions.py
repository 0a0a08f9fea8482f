"""Instructions per request over a real socket, event loop included (callgrind).

instructions.py counts veter's in-memory path, where the loop barely appears; this
counts what a request costs a server process with its loop doing the I/O: the
server (veter's Server on the loop that ``--loop auto`` picks, in this process,
under callgrind) answers a client in another process (not traced) that sends
requests one at a time over one keep-alive connection, so each request is one
wake-up, one read and one write, whatever the machine's load. Run twice, with LOW
and HIGH requests; the difference over the requests in between is one request's
user-space instructions, start-up taken out. The kernel's part is not counted.

    .venv-3.14/bin/python benchmarks/micro/loop_instructions.py [plaintext|json|asgi ...]

A loop in uvloop's place (benchmarks/micro/force_loop): the same command with
``PYTHONPATH=benchmarks/micro/force_loop:benchmarks/.work/zuvloop-3.14
VETER_FORCE_LOOP=zuvloop``. Counts move by a few hundred instructions from run to
run (timers that fire by the wall clock land in one run or the other): compare
differences larger than that.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

LOW, HIGH = 500, 2500
REQUESTS = {
    "plaintext": b"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
    "json": b"GET /json HTTP/1.1\r\nHost: t\r\n\r\n",
    "asgi": b"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
}
VALGRIND = ["valgrind", "--tool=callgrind"]
_TOTAL = re.compile(r"Collected\s*:\s*(\d+)")
ROOT = Path(__file__).resolve().parents[2]


def client(port: int, count: int, request: bytes) -> None:
    """Send `count` requests one at a time, each after the previous answer's end."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(count):
            sock.sendall(request)
            got = b""
            while True:
                got += sock.recv(65536)
                head, sep, body = got.partition(b"\r\n\r\n")
                if sep:
                    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                    if len(body) >= length:
                        break
            if not head.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"unexpected answer: {got[:200]!r}")


async def serve(kind: str, count: int) -> None:
    import veter
    from veter.server import Server

    sys.path.insert(0, str(ROOT))
    if kind == "asgi":
        from benchmarks.apps.asgi_raw import app as asgi_app
        from veter.hosted import AsgiApp

        app: veter.App = AsgiApp(asgi_app)
    else:
        from benchmarks.apps.veter_app import app
    server = Server(app, app.config.with_(host="127.0.0.1", port=0, access_log=None))
    await server.start()
    loop = asyncio.get_running_loop()
    argv = [sys.executable, __file__, "--client", str(server.port), str(count), kind]
    proc = subprocess.Popen(argv)
    status = await loop.run_in_executor(None, proc.wait)
    server.request_stop()
    await server.stop()
    if status != 0:
        raise SystemExit(f"client failed ({status})")


def _count(kind: str, count: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [*VALGRIND, f"--callgrind-out-file={tmp}/out", sys.executable, __file__, "--serve", str(count), kind],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=False,
        )
    found = _TOTAL.search(out.stderr)
    if out.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {kind} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return int(found.group(1))


def per_request(kind: str) -> int:
    low, high = _count(kind, LOW), _count(kind, HIGH)
    return round((high - low) / (HIGH - LOW))


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--client"]:
        client(int(args[1]), int(args[2]), REQUESTS[args[3]])
        return
    if args[:1] == ["--serve"]:
        from veter.loops import loop_factory

        with asyncio.Runner(loop_factory=loop_factory("auto")) as runner:
            runner.run(serve(args[2], int(args[1])))
        return
    from veter.loops import loop_factory

    probe = loop_factory("auto")()
    loop = type(probe).__module__.split(".")[0]
    probe.close()
    for kind in args or list(REQUESTS):
        print(f"{kind:10} {loop:8} {per_request(kind):>7,} instructions/request", flush=True)


if __name__ == "__main__":
    main()
