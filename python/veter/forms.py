"""Form bodies: ``application/x-www-form-urlencoded`` and ``multipart/form-data``.

``await request.form()`` reads the body as it arrives (the body stream of a
``stream_body=True`` route, or the buffered body), parses it with
python-multipart's streaming parsers, and gives a ``FormData``: the text fields
as ``str`` and the files as ``UploadFile``, each file held in memory up to
``form_spool_bytes`` and in a temporary file on disk beyond that. Every limit
is a server setting (docs/settings.md): too many fields or files, or a field,
a file or a part's headers too large, is a 413; a malformed body a 400; a body
that is not a form a 415. A file on disk is an unnamed temporary file, its
space freed when it is closed: by ``form.close()``, or by the server when the
request is done with (its answer written and the handler finished), so keep
what a background task needs, not the ``UploadFile``.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import unquote_to_bytes

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import (
    MultipartParser,
    MultipartState,
    QuerystringParser,
    parse_options_header,
)

from veter.datastructures import Headers, _MultiMapping
from veter.exceptions import HTTPException

__all__ = ["FORM_MEDIA_TYPES", "FormData", "FormLimits", "UploadFile", "read_form"]

#: The media types ``request.form()`` reads.
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class FormLimits:
    """Bounds on one form body; the server settings ``form_*`` set them."""

    #: Fields and files together (a urlencoded body counts its fields).
    max_fields: int = 1000
    max_files: int = 100
    #: Bytes of one text field's value.
    max_field_bytes: int = 1024 * 1024
    #: Bytes of one file; 0: only the request's max_body_bytes bounds it.
    max_file_bytes: int = 0
    #: Bytes of one part's headers.
    max_part_header_bytes: int = 16384
    #: A file is kept in memory up to this many bytes, then on disk.
    spool_bytes: int = 1024 * 1024

    @classmethod
    def of(cls, config: Any) -> FormLimits:
        """The limits a ``ServerConfig`` sets (the defaults for anything else)."""
        if config is None or not hasattr(config, "form_max_fields"):
            return cls()
        return cls(
            max_fields=config.form_max_fields,
            max_files=config.form_max_files,
            max_field_bytes=config.form_max_field_bytes,
            max_file_bytes=config.form_max_file_bytes,
            max_part_header_bytes=config.form_max_part_header_bytes,
            spool_bytes=config.form_spool_bytes,
        )


class UploadFile:
    """A file of a multipart form: its name and type as the client sent them, and
    its content in ``file`` (a ``SpooledTemporaryFile``, at position 0).

    ``filename`` is what the client says; never use it as a path without
    checking it. The async methods read and seek in a thread once the file is on
    disk, so a large file does not block the event loop.
    """

    __slots__ = ("content_type", "file", "filename", "headers", "size")

    def __init__(
        self,
        file: IO[bytes],
        *,
        filename: str | None,
        content_type: str,
        headers: Headers,
        size: int,
    ) -> None:
        self.file = file
        self.filename = filename
        self.content_type = content_type
        self.headers = headers
        self.size = size

    @property
    def in_memory(self) -> bool:
        """The content is still in memory (not spooled to disk)."""
        return not getattr(self.file, "_rolled", True)

    async def read(self, size: int = -1) -> bytes:
        if self.in_memory:
            return self.file.read(size)
        return await asyncio.to_thread(self.file.read, size)

    async def seek(self, offset: int) -> int:
        if self.in_memory:
            return self.file.seek(offset)
        return await asyncio.to_thread(self.file.seek, offset)

    async def close(self) -> None:
        if self.in_memory:
            self.file.close()
        else:
            await asyncio.to_thread(self.file.close)

    def __repr__(self) -> str:
        return f"UploadFile(filename={self.filename!r}, content_type={self.content_type!r}, size={self.size})"


class FormData(_MultiMapping[str | UploadFile]):
    """The fields of a form in arrival order: ``form["name"]`` the first value,
    ``form.getall("name")`` every one; text fields are ``str``, files ``UploadFile``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FormData):
            return self._items == other._items
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def files(self) -> list[UploadFile]:
        return [v for _, v in self._items if isinstance(v, UploadFile)]

    async def close(self) -> None:
        """Close every file (frees spooled disk space)."""
        for upload in self.files():
            await upload.close()

    def _release(self) -> None:
        # The request is done with (called by the core): close what is left open.
        for upload in self.files():
            upload.file.close()


async def read_form(request: Any, limits: FormLimits | None = None) -> FormData:
    """The request's form body, parsed (``request.form()`` calls this)."""
    if limits is None:
        limits = FormLimits.of(getattr(request.app, "_serving_config", None))
    headers = request.headers
    media, options = _media_type(headers.get("content-type"))
    if not media and headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers:
        form = FormData([])  # no body at all: an empty form
    elif media == b"multipart/form-data":
        boundary = options.get(b"boundary")
        if not boundary:
            raise HTTPException(400, "multipart/form-data without a boundary parameter")
        form = await _Multipart(boundary, limits).read(request.stream())
    elif media == b"application/x-www-form-urlencoded":
        form = await _read_urlencoded(request.stream(), limits)
    else:
        shown = media.decode("latin-1") or "none"
        raise HTTPException(415, f"the body must be a form ({' or '.join(FORM_MEDIA_TYPES)}), not {shown!r}")
    request._set_form(form)
    return form


def _media_type(value: str | None) -> tuple[bytes, dict[bytes, bytes]]:
    if not value:
        return b"", {}
    media, options = parse_options_header(value)
    return media.lower(), options


async def _read_urlencoded(chunks: Any, limits: FormLimits) -> FormData:
    items: list[tuple[str, str | UploadFile]] = []
    name = bytearray()
    value = bytearray()
    problem: HTTPException | None = None

    def field_start() -> None:
        name.clear()
        value.clear()

    def field_name(data: bytes, start: int, end: int) -> None:
        name.extend(data[start:end])

    def field_data(data: bytes, start: int, end: int) -> None:
        nonlocal problem
        value.extend(data[start:end])
        if len(value) > limits.max_field_bytes * 3 and problem is None:
            # Percent-encoding triples a byte at most: checked exactly at the end.
            problem = _too_large(
                f"a form field is over {limits.max_field_bytes} bytes (form_max_field_bytes)"
            )

    def field_end() -> None:
        nonlocal problem
        if problem is not None:
            return
        if len(items) >= limits.max_fields:
            problem = _too_large(f"the form has more than {limits.max_fields} fields (form_max_fields)")
            return
        decoded = _text(unquote_to_bytes(bytes(value).replace(b"+", b" ")), "field value")
        if len(decoded.encode()) > limits.max_field_bytes:
            problem = _too_large(
                f"a form field is over {limits.max_field_bytes} bytes (form_max_field_bytes)"
            )
            return
        key = _text(unquote_to_bytes(bytes(name).replace(b"+", b" ")), "field name")
        items.append((key, decoded))

    parser = QuerystringParser(
        {
            "on_field_start": field_start,
            "on_field_name": field_name,
            "on_field_data": field_data,
            "on_field_end": field_end,
        },
        strict_parsing=False,
    )
    async for chunk in chunks:
        parser.write(chunk)
        if problem is not None:
            raise problem
    parser.finalize()
    if problem is not None:
        raise problem
    return FormData(items)


class _Multipart:
    """One multipart body: the parser's callbacks collect each part; file data is
    written after each chunk (in a thread once a file is on disk)."""

    def __init__(self, boundary: bytes, limits: FormLimits) -> None:
        self.limits = limits
        self.items: list[tuple[str, str | UploadFile]] = []
        self.files = 0
        self.problem: HTTPException | None = None
        self.header_name = bytearray()
        self.header_value = bytearray()
        self.headers: list[tuple[str, str]] = []
        self.header_bytes = 0
        self.name = ""
        self.field = bytearray()
        self.upload: UploadFile | None = None
        self.pending: list[tuple[UploadFile, bytes]] = []
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self.part_begin,
                "on_header_field": self.header_field,
                "on_header_value": self.header_value_data,
                "on_header_end": self.header_end,
                "on_headers_finished": self.headers_finished,
                "on_part_data": self.part_data,
                "on_part_end": self.part_end,
            },
        )

    async def read(self, chunks: Any) -> FormData:
        try:
            async for chunk in chunks:
                try:
                    self.parser.write(chunk)
                except FormParserError as error:
                    raise HTTPException(400, f"malformed multipart body: {error}") from None
                if self.problem is not None:
                    raise self.problem
                await self.flush()
            try:
                self.parser.finalize()
            except FormParserError as error:
                raise HTTPException(400, f"malformed multipart body: {error}") from None
            if self.problem is not None:
                raise self.problem
            if self.upload is not None or self.header_bytes or self.name:
                raise HTTPException(400, "malformed multipart body: it ends inside a part")
            if not self.parser_done():
                raise HTTPException(400, "malformed multipart body: no closing boundary")
            await self.flush()
            await rewind(self.items)
        except BaseException:
            for _, value in self.items:
                if isinstance(value, UploadFile):
                    value.file.close()
            if self.upload is not None:
                self.upload.file.close()
            raise
        return FormData(self.items)

    def parser_done(self) -> bool:
        return bool(self.parser.state == MultipartState.END)

    async def flush(self) -> None:
        pending, self.pending = self.pending, []
        for upload, data in pending:
            if upload.in_memory:
                upload.file.write(data)
            else:
                await asyncio.to_thread(upload.file.write, data)

    def fail(self, problem: HTTPException) -> None:
        if self.problem is None:
            self.problem = problem

    def part_begin(self) -> None:
        self.headers = []
        self.header_bytes = 0
        self.field.clear()
        self.upload = None
        self.name = ""

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name.extend(data[start:end])
        self.count_header(end - start)

    def header_value_data(self, data: bytes, start: int, end: int) -> None:
        self.header_value.extend(data[start:end])
        self.count_header(end - start)

    def count_header(self, size: int) -> None:
        self.header_bytes += size
        if self.header_bytes > self.limits.max_part_header_bytes:
            self.fail(
                _too_large(
                    f"a part's headers are over {self.limits.max_part_header_bytes} bytes "
                    "(form_max_part_header_bytes)"
                )
            )

    def header_end(self) -> None:
        self.headers.append(
            (bytes(self.header_name).decode("latin-1"), bytes(self.header_value).decode("latin-1"))
        )
        self.header_name.clear()
        self.header_value.clear()

    def headers_finished(self) -> None:
        if self.problem is not None:
            return
        headers = Headers(self.headers)
        disposition, options = parse_options_header(headers.get("content-disposition", ""))
        if disposition.lower() != b"form-data" or b"name" not in options:
            self.fail(HTTPException(400, "a multipart part has no Content-Disposition: form-data; name=..."))
            return
        if len(self.items) >= self.limits.max_fields:
            self.fail(_too_large(f"the form has more than {self.limits.max_fields} fields (form_max_fields)"))
            return
        self.name = _text(options[b"name"], "part name")
        if b"filename" not in options:
            return
        if self.files >= self.limits.max_files:
            self.fail(_too_large(f"the form has more than {self.limits.max_files} files (form_max_files)"))
            return
        self.files += 1
        self.upload = UploadFile(
            tempfile.SpooledTemporaryFile(max_size=self.limits.spool_bytes),  # noqa: SIM115 - closed with the request
            filename=_text(options[b"filename"], "file name"),
            content_type=headers.get("content-type", "application/octet-stream"),
            headers=headers,
            size=0,
        )

    def part_data(self, data: bytes, start: int, end: int) -> None:
        if self.problem is not None or not self.name:
            return
        size = end - start
        upload = self.upload
        if upload is None:
            self.field.extend(data[start:end])
            if len(self.field) > self.limits.max_field_bytes:
                self.fail(
                    _too_large(
                        f"a form field is over {self.limits.max_field_bytes} bytes (form_max_field_bytes)"
                    )
                )
            return
        upload.size += size
        limit = self.limits.max_file_bytes
        if limit and upload.size > limit:
            self.fail(_too_large(f"a file is over {limit} bytes (form_max_file_bytes)"))
            return
        self.pending.append((upload, data[start:end]))

    def part_end(self) -> None:
        if self.problem is not None or not self.name:
            return
        if self.upload is not None:
            self.items.append((self.name, self.upload))
            self.upload = None
        else:
            self.items.append((self.name, _text(bytes(self.field), "field value")))
        self.name = ""
        self.header_bytes = 0


async def rewind(items: Iterable[tuple[str, str | UploadFile]]) -> None:
    """Every file back at position 0, for the handler."""
    for _, value in items:
        if isinstance(value, UploadFile):
            await value.seek(0)


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise HTTPException(400, f"a form {what} is not valid UTF-8") from None


def _too_large(detail: str) -> HTTPException:
    return HTTPException(413, detail)
