"""The ``http.response.pathsend`` extension: a hosted ASGI app names a file and the
server sends it (Starlette's ``FileResponse`` does so when the scope offers it).

The core checks the message and the file (``src/asgi/reply.rs``) and sets the
answer's ``Content-Length`` from its size; this coroutine, awaited by the app's
``send``, reads the file in veter's thread pool (the loop never waits on the disk)
and sends it as body messages, so a slow client pauses the reading. (No sendfile:
uvloop has no ``loop.sendfile``; the bytes pass through the process, as for
``veter.FileResponse``.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from veter.concurrency import run_in_thread

__all__ = ["send_file"]

CHUNK = 256 * 1024


async def send_file(send: Callable[[MutableMapping[str, Any]], Awaitable[None]], path: str) -> None:
    """Sends the content of ``path`` through ``send``, then ends the answer."""
    fh = await run_in_thread(open, path, "rb")
    try:
        while chunk := await run_in_thread(fh.read, CHUNK):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    finally:
        await run_in_thread(fh.close)
    await send({"type": "http.response.body", "body": b"", "more_body": False})
