"""Misbehaving servers on loopback for the client's timeout tests: one whose accept
queue is full (connections never complete), one that accepts and never answers, one
that answers one byte per second, and a DNS server that never answers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator


@contextlib.contextmanager
def full_backlog() -> Iterator[int]:
    """A listening port whose accept queue is full: the kernel drops new SYNs, so a
    connect neither succeeds nor fails. Yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers: list[socket.socket] = []
    try:
        while True:  # connect until the kernel stops completing handshakes
            filler = socket.socket()
            filler.settimeout(0.2)
            fillers.append(filler)
            try:
                filler.connect(("127.0.0.1", port))
            except TimeoutError:
                break
            if len(fillers) > 64:
                raise RuntimeError("the accept queue never filled")
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[int]:
    """Accepts connections, reads what comes, never writes."""
    held: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in held:
            writer.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def trickling_server(interval: float = 1.0) -> AsyncIterator[int]:
    """Answers every request one byte per ``interval`` (headers included)."""
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000
    tasks: set[asyncio.Task[None]] = set()

    async def trickle(writer: asyncio.StreamWriter) -> None:
        try:
            for i in range(len(response)):
                writer.write(response[i : i + 1])
                await writer.drain()
                await asyncio.sleep(interval)  # the server's pace, not a readiness wait
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        task = asyncio.ensure_future(trickle(writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


class SilentDNS:
    """A UDP DNS server on loopback that receives queries and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]

    def queries(self) -> int:
        """How many queries arrived (drains them)."""
        count = 0
        while True:
            try:
                self.sock.recv(4096)
            except BlockingIOError:
                return count
            count += 1

    def close(self) -> None:
        self.sock.close()
