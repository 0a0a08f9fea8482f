"""A worker's listening socket that can stop accepting and start again.

With ``max_concurrency`` set, a worker that has reached its cap stops accepting new
connections, so the kernel backlog and the other workers (which share the socket)
take them, instead of this worker accepting connections it cannot serve yet. The
loop's server objects cannot pause, so the listener hands each one a duplicate of
the listening descriptor: closing that server stops this worker's accepting while
the socket itself stays open, and resuming creates a server on a new duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from collections.abc import Callable

__all__ = ["Listener", "accept_pending"]

log = logging.getLogger("veter.server")


class Listener:
    """Serves ``protocol_factory`` on ``sock``, with ``pause()`` and ``resume()``."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        backlog: int,
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._sock = sock
        self._tls = tls
        self._factory = protocol_factory
        self._backlog = backlog
        self._current: asyncio.Server | None = None
        # Servers closed by pause() whose connections are not all closed yet.
        self._retired: set[asyncio.Server] = set()
        self._watchers: set[asyncio.Task[None]] = set()
        self._opening: asyncio.Task[None] | None = None
        self._closed = False
        self._want_open = True
        #: How many times accepting paused (for tests and metrics).
        self.pauses = 0

    @property
    def sockets(self) -> list[socket.socket]:
        return [self._sock]

    @property
    def accepting(self) -> bool:
        return self._current is not None

    async def start(self) -> None:
        self._current = await self._serve()

    async def _serve(self) -> asyncio.Server:
        duplicate = socket.socket(fileno=os.dup(self._sock.fileno()))
        loop = asyncio.get_running_loop()
        return await loop.create_server(self._factory, sock=duplicate, backlog=self._backlog, ssl=self._tls)

    def set_saturated(self, saturated: bool) -> None:
        """The dispatcher's saturation callback: pause at the cap, resume below it."""
        if saturated:
            self.pause()
        else:
            self.resume()

    def pause(self) -> None:
        self._want_open = False
        if self._current is not None:
            self._retire(self._current)
            self._current = None
            self.pauses += 1

    def resume(self) -> None:
        self._want_open = True
        if self._closed or self._current is not None or self._opening is not None:
            return
        self._opening = asyncio.get_running_loop().create_task(self._reopen())

    async def _reopen(self) -> None:
        try:
            server = await self._serve()
        except OSError as exc:  # out of descriptors: the accept path's fatal errors apply
            log.error("could not resume accepting: %r", exc)
            raise
        finally:
            self._opening = None
        if self._closed or not self._want_open:
            # Closed, or saturated again, while the server was being made.
            self._retire(server)
            return
        self._current = server

    def close(self) -> None:
        """Stop accepting for good and close the listening socket (which the
        listener owns, as the loop's server owns a socket handed to it)."""
        self._closed = True
        if self._opening is not None:
            self._opening.cancel()
        if self._current is not None:
            self._retire(self._current)
            self._current = None
        self._sock.close()

    def _retire(self, server: asyncio.Server) -> None:
        """Stop ``server`` accepting; forget it once its connections have closed."""
        server.close()
        self._retired.add(server)
        watcher = asyncio.get_running_loop().create_task(server.wait_closed())
        self._watchers.add(watcher)

        def forget(task: asyncio.Task[None]) -> None:
            self._watchers.discard(task)
            self._retired.discard(server)

        watcher.add_done_callback(forget)

    async def wait_closed(self) -> None:
        if self._opening is not None:
            await asyncio.gather(self._opening, return_exceptions=True)
        if self._watchers:
            await asyncio.gather(*self._watchers, return_exceptions=True)


def accept_pending(sock: socket.socket, limit: int = 65536) -> list[socket.socket]:
    """Accepts every connection already waiting in ``sock``'s queue, without waiting.

    Used just before a listening socket closes for good: closing it would reset
    every connection whose handshake the kernel completed but nobody accepted yet,
    and their clients may already have sent a request. Accepted here, they are
    served (their answer carries ``Connection: close``) like any other.
    """
    accepted: list[socket.socket] = []
    # Non-blocking already (the loop needs it so); said again because the flag
    # belongs to the socket every worker shares, and it must never be cleared.
    sock.setblocking(False)
    while len(accepted) < limit:
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            break
        except OSError as exc:  # out of descriptors: what is left is reset by the close
            log.warning("could not accept the queued connections before closing: %r", exc)
            break
        conn.setblocking(False)
        accepted.append(conn)
    return accepted
