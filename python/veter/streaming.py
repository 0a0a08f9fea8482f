"""Streamed responses: a body produced piece by piece by an (async) iterable.

The Rust core writes the head and then runs the response's pump, which writes
each piece through a ``StreamWriter`` and waits whenever the client is behind
(the transport is above its high watermark), so a slow client pauses the
generator instead of growing the server's memory. See docs/design.md,
"Streaming and backpressure".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from veter import _core
from veter.cookies import delete_cookie_header, set_cookie_header
from veter.response_headers import ResponseHeaders

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from veter._core import StreamWriter
    from veter.cookies import CookieAttributes, DeleteCookieAttributes

__all__ = ["Content", "StreamingResponse"]

log = logging.getLogger("veter.stream")

# Pieces written without the loop turning before the pump yields to it anyway.
_PIECES_PER_TURN = 16

Content = AsyncIterable[bytes | str] | Iterable[bytes | str]


class StreamingResponse(_core.Streamed):
    """A response whose body comes from ``content``, an async iterable (an async
    generator, typically) or a plain iterable of ``bytes`` or ``str`` pieces.

    Without ``content_length`` the body is sent with chunked transfer coding (to
    HTTP/1.0 clients: delimited by closing the connection). With it, the body must
    be exactly that long, or the connection is closed mid-response. Plain
    iterables run on the event loop: keep each step short (or use an async
    generator and ``veter.run_in_thread``). The generator is closed when the
    client goes away, when the body is not wanted (HEAD, 204, 304) and when it
    finishes.
    """

    def __init__(
        self,
        content: Content,
        status: int = 200,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        content_type: str | None = "application/octet-stream",
        *,
        content_length: int | None = None,
        charset: str = "utf-8",
    ) -> None:
        if not isinstance(status, int) or not 100 <= status <= 999:
            raise ValueError(f"status must be an int from 100 to 999, got {status!r}")
        if content_length is not None and (not isinstance(content_length, int) or content_length < 0):
            raise ValueError(f"content_length must be a non-negative int, got {content_length!r}")
        if not isinstance(content, (AsyncIterable, Iterable)) or isinstance(content, (bytes, str)):
            raise TypeError("content must be an async iterable or an iterable of bytes or str pieces")
        self.content = content
        self.status = status
        self.content_type = content_type
        self.content_length = content_length
        self.charset = charset
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        #: The fields besides Content-Type, as the core writes them in the head (it
        #: checks them there; the setters below check them when set).
        self._veter_headers: list[tuple[str, str]] = [(str(n), str(v)) for n, v in items]

    # -- the same headers and helpers as Response, for middleware --------------

    @property
    def headers(self) -> ResponseHeaders:
        """The header fields: a case-insensitive mutable mapping over this
        response's own (``getall``/``add`` for repeated fields), as ``Response.headers``."""
        return ResponseHeaders(self)

    def _header_items(self) -> list[tuple[str, str]]:
        if self.content_type is None:
            return list(self._veter_headers)
        return [("Content-Type", self.content_type), *self._veter_headers]

    def get_header(self, name: str, default: str | None = None) -> str | None:
        lower = name.lower()
        if lower == "content-type":
            return default if self.content_type is None else self.content_type
        for n, v in self._veter_headers:
            if n.lower() == lower:
                return v
        return default

    def remove_header(self, name: str) -> int:
        lower = name.lower()
        if lower == "content-type":
            had = self.content_type is not None
            self.content_type = None
            return int(had)
        before = len(self._veter_headers)
        self._veter_headers = [(n, v) for n, v in self._veter_headers if n.lower() != lower]
        return before - len(self._veter_headers)

    def set_header(self, name: str, value: str) -> None:
        _core.check_header(name, value)
        if name.lower() == "content-type":
            self.content_type = value
            return
        self.remove_header(name)
        self._veter_headers.append((name, value))

    def add_header(self, name: str, value: str) -> None:
        _core.check_header(name, value)
        if name.lower() == "content-type":
            self.content_type = value
            return
        self._veter_headers.append((name, value))

    def set_cookie(self, key: str, value: str = "", **attributes: Unpack[CookieAttributes]) -> None:
        """Adds a ``Set-Cookie`` header (the attributes of
        ``veter.cookies.set_cookie_header``), as ``Response.set_cookie`` does."""
        self._veter_headers.append(("Set-Cookie", set_cookie_header(key, value, **attributes)))

    def delete_cookie(self, key: str, **attributes: Unpack[DeleteCookieAttributes]) -> None:
        """Adds a ``Set-Cookie`` header that removes cookie ``key``."""
        self._veter_headers.append(("Set-Cookie", delete_cookie_header(key, **attributes)))

    # -- called by the core ---------------------------------------------------

    def _veter_start(self, writer: StreamWriter, send_body: bool) -> asyncio.Task[None] | None:
        """Called by the core when this response's turn comes: the task that pumps
        the body (None for a response that is done at once, like an upgrade)."""
        return asyncio.get_running_loop().create_task(self._pump(writer, send_body))

    def _veter_abandon(self) -> None:
        """Called by the core when the connection went away before this response
        was started: the content's generator is closed."""
        asyncio.get_running_loop().create_task(_close(self.content))
        self._veter_finished()

    def _veter_when_finished(self, callback: Callable[[], object]) -> None:
        """``callback()`` once the body has been sent, or has failed, or will never
        be (veter.background runs a request's dependency cleanup and background
        tasks after a streamed answer this way)."""
        self.__dict__.setdefault("_veter_finish_callbacks", []).append(callback)

    def _veter_finished(self) -> None:
        for callback in self.__dict__.pop("_veter_finish_callbacks", ()):
            callback()

    async def _pump(self, writer: StreamWriter, send_body: bool) -> None:
        iterator = self._iterate()
        ok = False
        try:
            if send_body:
                loop = asyncio.get_running_loop()
                unyielded = 0
                async for piece in iterator:
                    if writer.write(piece):
                        waiter: asyncio.Future[None] = loop.create_future()
                        writer.wait(waiter)
                        await waiter
                        unyielded = 0
                    else:
                        # A generator that never awaits must not hold the loop:
                        # let other connections run every few pieces.
                        unyielded += 1
                        if unyielded >= _PIECES_PER_TURN:
                            unyielded = 0
                            await asyncio.sleep(0)
            ok = True
        except ConnectionError:
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            raise  # connection lost: the finally below closes the generator
        except Exception:
            log.exception("streamed response failed after its head was sent; closing the connection")
        finally:
            try:
                await iterator.aclose()
            finally:
                writer.end(ok)
                self._veter_finished()

    async def _iterate(self) -> AsyncGenerator[bytes, None]:
        content = self.content
        try:
            if isinstance(content, AsyncIterable):
                async for piece in content:
                    yield self._encode(piece)
            else:
                for piece in content:
                    yield self._encode(piece)
        finally:
            await _close(content)

    def _encode(self, piece: Any) -> bytes:
        if isinstance(piece, bytes):
            return piece
        if isinstance(piece, str):
            return piece.encode(self.charset)
        if isinstance(piece, (bytearray, memoryview)):
            return bytes(piece)
        raise TypeError(f"a streamed body yields bytes or str, not {type(piece).__name__}")


async def _close(content: object) -> None:
    """Closes a generator (async or not) that may not have run to its end."""
    aclose = getattr(content, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(content, "close", None)
    if close is not None and isinstance(content, Iterator):
        close()
