"""A file's bytes as the rest of a streamed answer, sent with ``os.sendfile(2)``:
from the page cache to the socket, never through the process.

uvloop has no ``loop.sendfile``, so the core lends the socket's descriptor
(``StreamWriter._sendfile_socket``) when nothing else is in flight on the
connection: a plain-text socket (TLS encrypts in the process), a body of known
length, the transport's buffer empty. The socket is ``dup``-ed for the time of the
transfer, so a connection the loop closes meanwhile cannot hand its number to a
new client. Each ``sendfile`` call runs in veter's thread pool (a file not in the
page cache makes it wait on the disk, never the loop); when the socket is full the
loop waits for it to take more (``add_writer`` on the duplicate), and a client
that takes nothing for ``write_timeout`` seconds is dropped, as with any answer.
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Protocol

from veter.concurrency import run_in_thread

__all__ = ["Writer", "transmit"]

#: Bytes asked of one ``sendfile`` call (it sends what the socket takes).
BLOCK = 4 * 1024 * 1024
#: How often a wait for the socket checks that the connection is still open.
CHECK_EVERY = 1.0

_GONE = frozenset({errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.EBADF})


class Writer(Protocol):
    """What ``transmit`` needs of the core's ``StreamWriter``."""

    def _sendfile_socket(self) -> tuple[int, float, int] | None: ...
    def _sent_out_of_band(self, n: int) -> None: ...
    def end(self, ok: bool) -> None: ...


async def transmit(writer: Writer, fd: int, offset: int, count: int) -> bool:
    """Sends ``count`` bytes of the open file ``fd`` from ``offset`` as the rest of
    ``writer``'s body. False when sendfile cannot be used on this connection (nothing
    was sent; the caller sends the bytes itself). True when it was: the bytes went
    out (or none were to: a HEAD request's answer), or the answer was cut and the connection closed (the client left, stopped
    reading for ``write_timeout``, or the file was shorter than announced)."""
    if not hasattr(os, "sendfile"):
        return False
    claim = writer._sendfile_socket()
    if claim is not None and claim[0] == -1:
        # The transport still holds the head: one loop turn writes it.
        await asyncio.sleep(0)
        claim = writer._sendfile_socket()
    if claim is None or claim[0] == -1:
        return False
    if claim[0] == -2:
        return True  # no body goes out (a HEAD request's answer)
    socket_fd, write_timeout, owed = claim
    if count > owed:
        writer.end(False)  # more than the announced length: the answer cannot be right
        return True
    sock = os.dup(socket_fd)
    try:
        await _pump(writer, sock, fd, offset, count, write_timeout)
    except (ConnectionError, TimeoutError, EOFError):
        writer.end(False)
    finally:
        os.close(sock)
    return True


async def _pump(writer: Writer, sock: int, fd: int, offset: int, count: int, write_timeout: float) -> None:
    loop = asyncio.get_running_loop()
    while count > 0:
        try:
            n = await run_in_thread(os.sendfile, sock, fd, offset, min(count, BLOCK))
        except BlockingIOError:
            await _writable(loop, writer, sock, write_timeout)
            continue
        except OSError as exc:
            if exc.errno in _GONE:
                raise ConnectionResetError("the client disconnected") from exc
            raise
        if n == 0:
            raise EOFError("the file ended before the announced length")
        writer._sent_out_of_band(n)
        offset += n
        count -= n


async def _writable(loop: asyncio.AbstractEventLoop, writer: Writer, sock: int, write_timeout: float) -> None:
    """Waits until the socket takes more; raises TimeoutError after ``write_timeout``
    seconds without, ConnectionResetError once the connection is closed."""
    deadline = loop.time() + write_timeout
    while True:
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_writer(sock, _settle, ready)
        try:
            await asyncio.wait_for(ready, min(CHECK_EVERY, max(deadline - loop.time(), 0.0)))
            return
        except TimeoutError:
            writer._sent_out_of_band(0)  # raises when the connection is closed
            if loop.time() >= deadline:
                raise TimeoutError("the client stopped reading (write_timeout)") from None
        finally:
            loop.remove_writer(sock)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
