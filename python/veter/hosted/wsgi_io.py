"""The streams a hosted WSGI app is given: ``wsgi.input``, ``wsgi.errors`` and
``wsgi.file_wrapper`` (PEP 3333).

The app runs in a worker thread; the request's body is in the core, on the event
loop. ``InputStream`` fetches it one ``http.request`` message at a time from the
loop, only when the app reads past what it holds, so an upload of any size passes
through with one message in memory (the core's backpressure holds the rest).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import IO, Any

from veter import _core

__all__ = ["ClientDisconnected", "ErrorStream", "FileWrapper", "InputStream"]

Message = MutableMapping[str, Any]

log = logging.getLogger("veter.wsgi")


class ClientDisconnected(OSError):
    """The client went away before sending the whole request body."""


class InputStream:
    """``wsgi.input``: the request body, read from the core as the app asks for it.

    Reading at the end gives ``b""`` (``wsgi.input_terminated`` is true: an app may
    read to the end without a Content-Length, as for a chunked body).
    """

    def __init__(
        self,
        receive: Callable[[], Awaitable[Message]],
        loop: asyncio.AbstractEventLoop,
        first: Awaitable[Message] | None,
    ) -> None:
        """``first`` is what ``receive()`` gave on the loop for the body's first
        piece (None: there is no body). A ``Ready``, or a future that is done, is
        held and read without a trip to the loop; anything else is awaited on the
        loop when the app first reads. Nothing is raised here: a client that left
        is the app's first read's ``ClientDisconnected``."""
        self._receive = receive
        self._loop = loop
        self._buf = bytearray()
        self._pos = 0
        self._done = first is None
        self._held: Message | None = None
        self._waiting: Awaitable[Message] | None = None
        if isinstance(first, _core.Ready):
            self._held = first.value
        elif (
            isinstance(first, asyncio.Future)
            and first.done()
            and not first.cancelled()
            and first.exception() is None
        ):
            self._held = first.result()
        elif first is not None:
            self._waiting = first

    def _take(self, message: Message) -> None:
        if message["type"] == "http.disconnect":
            self._done = True
            raise ClientDisconnected("the client went away before the whole request body arrived")
        self._buf += message.get("body", b"")
        self._done = not message.get("more_body", False)

    def _fill(self) -> bool:
        """One more message (from the loop unless held); False at the end of the body."""
        if self._done:
            return False
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        if self._held is not None:
            message, self._held = self._held, None
        else:
            message = asyncio.run_coroutine_threadsafe(self._next(), self._loop).result()
        self._take(message)
        return True

    async def _next(self) -> Message:
        waiting, self._waiting = self._waiting, None
        return await (waiting if waiting is not None else self._receive())

    @property
    def exhausted(self) -> bool:
        """Whether the whole body has been read from the core."""
        return self._done

    def _available(self) -> int:
        return len(self._buf) - self._pos

    def _cut(self, n: int) -> bytes:
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += n
        return out

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when ``size`` is negative or None)."""
        if size is None or size < 0:
            while self._fill():
                pass
            return self._cut(self._available())
        while self._available() < size and self._fill():
            pass
        return self._cut(min(size, self._available()))

    def readline(self, size: int | None = -1) -> bytes:
        """One line, with its ``\\n`` (at most ``size`` bytes when it is given)."""
        limit = -1 if size is None else size
        scanned = 0  # bytes after the read position already searched for b"\n"
        while True:
            end = self._buf.find(b"\n", self._pos + scanned)
            if end >= 0:
                n = end + 1 - self._pos
                return self._cut(n if limit < 0 else min(n, limit))
            available = self._available()
            if 0 <= limit <= available:
                return self._cut(limit)
            scanned = available
            if not self._fill():
                return self._cut(available if limit < 0 else min(limit, available))

    def readlines(self, hint: int | None = -1) -> list[bytes]:
        """Lines until the end (or until ``hint`` bytes have been read)."""
        lines: list[bytes] = []
        total = 0
        while line := self.readline():
            lines.append(line)
            total += len(line)
            if hint is not None and 0 < hint <= total:
                break
        return lines

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line


class ErrorStream:
    """``wsgi.errors``: what the app writes goes to the ``veter.wsgi`` logger, a
    record per line (with the request id, as every log line of the request)."""

    def __init__(self) -> None:
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            log.error("%s", line)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._pending:
            log.error("%s", self._pending)
            self._pending = ""


class FileWrapper:
    """``wsgi.file_wrapper``: a file's content as the response. A regular file (one
    with ``fileno``) goes out with sendfile where the connection allows it
    (``veter.hosted.pathsend.send_range``); anything else is iterated, in blocks
    read in the worker thread (the loop never waits on the disk)."""

    def __init__(self, filelike: IO[bytes], block_size: int = 256 * 1024) -> None:
        self.filelike = filelike
        self.block_size = block_size
        close = getattr(filelike, "close", None)
        if close is not None:
            self.close = close

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        data = self.filelike.read(self.block_size)
        if data:
            return bytes(data)
        raise StopIteration

    def remaining(self) -> int | None:
        """Bytes left to send when the file is a regular one, else None."""
        try:
            info = os.fstat(self.filelike.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            left = info.st_size - self.filelike.tell()
        except (AttributeError, OSError, ValueError):
            return None
        return max(left, 0)
