"""Files: ``FileResponse`` and ``app.static("/static", directory)``.

A file's bytes go out with ``sendfile(2)`` (``veter.sendfile``: from the page cache
to the socket, never through the process) where the connection allows it. Elsewhere
(TLS; a body that middleware such as compression rewrites) it is streamed in pieces
(``StreamingResponse``), so a slow client pauses the reading instead of growing
memory. Either way the disk is read in the thread pool, so a slow disk does not
stall the event loop.

Caching and ranges, per RFC 9110: ``ETag`` (from the file's size and
modification time) and ``Last-Modified``; ``If-None-Match`` / ``If-Modified-Since``
answer 304; ``Range: bytes=...`` with one range answers 206 with ``Content-Range``
(honouring ``If-Range``), an unsatisfiable one 416; several ranges are answered
with the whole file (a server may ignore Range).
"""

from __future__ import annotations

import email.utils
import logging
import mimetypes
import os
import stat
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veter import sendfile
from veter.concurrency import run_in_thread
from veter.exceptions import HTTPException
from veter.responses import Response
from veter.streaming import StreamingResponse, _close

if TYPE_CHECKING:
    from veter._core import StreamWriter
    from veter.app import App

__all__ = ["FileResponse", "StaticFiles", "file_response"]

CHUNK = 256 * 1024

log = logging.getLogger("veter.files")


def _etag(st: os.stat_result) -> str:
    # Strong, like nginx's: a file rewritten within the same nanosecond with the same
    # size is the only change it misses.
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


def _http_date(seconds: float) -> str:
    return email.utils.formatdate(seconds, usegmt=True)


def _parse_range(header: str, size: int) -> tuple[int, int] | bool | None:
    """(start, end inclusive) for one satisfiable range; None to ignore the header
    (malformed, several ranges, not bytes); False when unsatisfiable (416)."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":
            if not last.isdigit():
                return None
            length = int(last)
            if length == 0:
                return False
            return (max(0, size - length), size - 1) if size else False
        if not first.isdigit() or (last and not last.isdigit()):
            return None
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start > end and last:
        return None
    if start >= size:
        return False
    return start, min(end, size - 1)


async def _read(path: str, start: int, count: int) -> AsyncIterator[bytes]:
    fd = await run_in_thread(os.open, path, os.O_RDONLY)
    try:
        offset, left = start, count
        while left > 0:
            piece = await run_in_thread(os.pread, fd, min(CHUNK, left), offset)
            if not piece:
                raise OSError(f"{path} became shorter while it was being sent")
            offset += len(piece)
            left -= len(piece)
            yield piece
    finally:
        os.close(fd)


def file_response(
    path: str | os.PathLike[str],
    request: Any = None,
    *,
    content_type: str | None = None,
    headers: Mapping[str, str] | None = None,
    filename: str | None = None,
) -> Response | StreamingResponse:
    """The response for the file at ``path``: 200, or with ``request`` (for its
    conditional and Range headers) 304, 206 or 416. Raises ``HTTPException(404)``
    when it is not a regular file."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise HTTPException(404) from None
    if not stat.S_ISREG(st.st_mode):
        raise HTTPException(404)
    etag, modified = _etag(st), _http_date(st.st_mtime)
    common = {"ETag": etag, "Last-Modified": modified, "Accept-Ranges": "bytes", **(headers or {})}
    if filename is not None:
        common["Content-Disposition"] = f'attachment; filename="{_quoted(filename)}"'
    if content_type is None:
        guessed, encoding = mimetypes.guess_type(path)
        content_type = guessed or "application/octet-stream"
        if encoding is None and content_type.startswith("text/"):
            content_type += "; charset=utf-8"
    header = request.headers.get if request is not None else (lambda name, default=None: default)
    if _not_modified(header, etag, st):
        return Response(b"", status=304, headers=common)
    size, start, status = st.st_size, 0, 200
    wanted = header("range")
    if wanted and _if_range_holds(header("if-range"), etag, st):
        parsed = _parse_range(wanted, size)
        if parsed is False:
            return Response(
                b"", status=416, headers={**common, "Content-Range": f"bytes */{size}"}, content_type=None
            )
        if isinstance(parsed, tuple):
            start, end = parsed
            size = end - start + 1
            status = 206
            common["Content-Range"] = f"bytes {start}-{end}/{st.st_size}"
    return FileStream(path, start, size, status=status, headers=common, content_type=content_type)


class FileStream(StreamingResponse):
    """``size`` bytes of the file at ``path`` from ``start``: sent with sendfile when
    the connection allows and the content is still the file's own (middleware may
    have replaced it), else read and streamed in pieces."""

    def __init__(self, path: str, start: int, size: int, **kwargs: Any) -> None:
        self._source = _read(path, start, size)
        super().__init__(self._source, content_length=size, **kwargs)
        self._where = (path, start, size)

    async def _pump(self, writer: StreamWriter, send_body: bool) -> None:
        if send_body and self.content is self._source and await self._sent_with_sendfile(writer):
            return
        await super()._pump(writer, send_body)

    async def _sent_with_sendfile(self, writer: StreamWriter) -> bool:
        """True when the body went out with sendfile (or the answer was cut): the
        writer is ended and the response finished. False when nothing was sent."""
        path, start, size = self._where
        try:
            fd = await run_in_thread(os.open, path, os.O_RDONLY)
        except OSError:
            return False  # the streaming path reports it
        handled, ok = True, False
        try:
            handled = ok = await sendfile.transmit(writer, fd, start, size)
        except Exception:
            log.exception("file response failed after its head was sent; closing the connection")
        finally:
            os.close(fd)
            if handled:
                try:
                    await _close(self.content)  # the unused reader
                finally:
                    writer.end(ok)
                    self._veter_finished()
        return handled


def _quoted(name: str) -> str:
    return "".join(c if c.isprintable() and c not in '"\\' else "_" for c in name)


def _not_modified(header: Any, etag: str, st: os.stat_result) -> bool:
    match = header("if-none-match")
    if match is not None:
        tags = [t.strip().removeprefix("W/") for t in match.split(",")]
        return "*" in tags or etag.removeprefix("W/") in tags
    since = header("if-modified-since")
    if since is not None:
        try:
            when = email.utils.parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False
        return int(st.st_mtime) <= when
    return False


def _if_range_holds(value: str | None, etag: str, st: os.stat_result) -> bool:
    """A Range applies unless If-Range names another version of the file."""
    if value is None:
        return True
    value = value.strip()
    if value.startswith(('"', "W/")):
        return value == etag  # strong comparison: a weak tag never matches
    try:
        return int(st.st_mtime) <= email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return False


FileResponse = file_response


class StaticFiles:
    """Serves the files under ``directory`` (see ``App.static``)."""

    def __init__(self, directory: str | os.PathLike[str], *, index: str | None = "index.html") -> None:
        root = Path(directory).resolve()
        if not root.is_dir():
            raise ValueError(f"static directory {os.fspath(directory)!r} is not a directory")
        self.root = root
        self.index = index

    def resolve(self, relative: str) -> Path:
        """The file ``relative`` names inside the directory; 404 for anything that
        would leave it (``..``, absolute paths, NUL, symlinks pointing outside)."""
        if "\x00" in relative or "\\" in relative:
            raise HTTPException(404)
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise HTTPException(404)
        candidate = self.root.joinpath(*parts)
        try:
            real = candidate.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError, RuntimeError, OSError):
            raise HTTPException(404) from None
        if real != self.root and self.root not in real.parents:
            raise HTTPException(404)
        if real.is_dir():
            if self.index is None:
                raise HTTPException(404)
            return self.resolve("/".join([*parts, self.index]))
        if relative.endswith("/"):
            raise HTTPException(404)  # a file named like a directory
        return real

    def __call__(self, request: Any, path: str = "") -> Response | StreamingResponse:
        return file_response(self.resolve(path), request)


def mount(
    app: App, prefix: str, directory: str | os.PathLike[str], *, index: str | None = "index.html"
) -> StaticFiles:
    if not prefix.startswith("/"):
        raise ValueError(f"static prefix must start with '/': {prefix!r}")
    files = StaticFiles(directory, index=index)
    base = prefix.rstrip("/")
    app.add_route(f"{base}/", files, ["GET"], name=f"static:{base or '/'}:index")
    app.add_route(f"{base}/{{path:path}}", files, ["GET"], name=f"static:{base or '/'}")
    return files
