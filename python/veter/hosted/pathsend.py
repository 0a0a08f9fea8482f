"""Files as answers of hosted apps: the ASGI ``http.response.pathsend`` extension
(Starlette's ``FileResponse`` uses it when the scope offers it) and the WSGI
``wsgi.file_wrapper`` (``veter.hosted.wsgi``).

The core checks a pathsend message and its file (``src/asgi/reply.rs``) and sets
the answer's ``Content-Length`` from the file's size. The bytes then go out with
``sendfile(2)`` (``veter.sendfile``) where the connection allows it; elsewhere (TLS,
a HEAD request, a ``send`` wrapped by middleware) the file is read in veter's
thread pool (the loop never waits on the disk) and sent as body messages, so a
slow client pauses the reading.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import IO, Any

from veter import sendfile
from veter.concurrency import run_in_thread

__all__ = ["send_file", "send_range"]

CHUNK = 256 * 1024

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def send_file(cycle: Any, path: str) -> None:
    """Sends the content of ``path`` as the answer's body (the core's cycle calls
    this for a pathsend message), then ends the answer."""
    fh = await run_in_thread(open, path, "rb")
    try:
        size = os.fstat(fh.fileno()).st_size
        await send_range(cycle.send, fh, 0, size)
    finally:
        await run_in_thread(fh.close)


async def send_range(send: Send, fh: IO[bytes], offset: int, count: int) -> None:
    """Sends ``count`` bytes of ``fh`` from ``offset`` as the body of the answer
    whose ``http.response.start`` went through ``send``, then ends it."""
    # The first (empty) body message makes the answer a stream and returns once it
    # is at the front of the connection's queue (its head written).
    await send({"type": "http.response.body", "body": b"", "more_body": True})
    sent = False
    writer_of = getattr(getattr(send, "__self__", None), "_veter_writer", None)
    if writer_of is not None:
        # veter's own send: its stream's writer, or None once the client has gone.
        writer = writer_of()
        sent = writer is None or await sendfile.transmit(writer, fh.fileno(), offset, count)
    if not sent:
        await run_in_thread(fh.seek, offset)
        while count > 0 and (chunk := await run_in_thread(fh.read, min(CHUNK, count))):
            count -= len(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
