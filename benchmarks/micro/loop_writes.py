"""When does a loop send what a protocol writes: at once, or at the end of the loop
iteration? (benchmarks/notes/pythons.md: why veter does not offer zuvloop.)

A server protocol writes b"early", then works 50 ms in the same callback, then writes
b"late"; a client in this process's main thread times its first bytes. A loop that
writes at once sends "early" within a millisecond; one that holds writes to the end
of the iteration sends both after the work.

    .venv-3.14/bin/python benchmarks/micro/loop_writes.py uvloop
    PYTHONPATH=benchmarks/.work/zuvloop-3.14 .venv-3.14/bin/python benchmarks/micro/loop_writes.py zuvloop
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import sys
import threading
import time

WORK = 0.05


class Writer(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not derive from asyncio.Transport: no isinstance check.
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.transport.write(b"early\n")
        time.sleep(WORK)  # the work a callback does after writing
        self.transport.write(b"late\n")


async def _serve(ready: threading.Event, port: list[int]) -> None:
    server = await asyncio.get_running_loop().create_server(Writer, "127.0.0.1", 0)
    port.append(server.sockets[0].getsockname()[1])
    ready.set()
    await asyncio.sleep(2)
    server.close()


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "uvloop"
    new_loop = importlib.import_module(name).new_event_loop if name != "asyncio" else asyncio.new_event_loop
    ready, port = threading.Event(), []
    thread = threading.Thread(target=lambda: asyncio.run(_serve(ready, port), loop_factory=new_loop), daemon=True)
    thread.start()
    ready.wait(10)
    with socket.create_connection(("127.0.0.1", port[0])) as sock:
        start = time.monotonic()
        sock.sendall(b"x")
        first = sock.recv(100)
    print(f"{name}: first bytes {(time.monotonic() - start) * 1000:.1f} ms after the request: {first!r}")


if __name__ == "__main__":
    main()
