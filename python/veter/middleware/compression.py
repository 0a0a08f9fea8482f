"""Response compression: gzip always, brotli and zstd when their packages are installed.

``app.middleware(compress())``. The coding is chosen from the request's
``Accept-Encoding`` by its q-values (ties go to the server's order: zstd, br,
gzip); the answer gets ``Content-Encoding`` and ``Vary: Accept-Encoding``. Left as
they are: bodies under ``minimum_size``, types that do not compress (images,
archives, video: only the listed types are compressed), answers that already have
a ``Content-Encoding``, ``Cache-Control: no-transform``, partial content (206 or a
``Content-Range``), and answers without a body (1xx, 204, 304). A streamed answer is
compressed piece by piece, each piece flushed so that it reaches the client when
the app yields it (Server-Sent Events stay live). A strong ``ETag`` becomes weak:
the compressed bytes are not the same representation.

Whole bodies of ``thread_threshold`` bytes or more are compressed in veter's
thread pool (zlib, brotli and zstd release the GIL), so one large answer does not
stall the other requests of the worker.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Sequence
from typing import Any, Protocol

from veter.concurrency import run_in_thread
from veter.responses import AnyResponse
from veter.routing import CallNext, Middleware
from veter.streaming import Content, StreamingResponse, _close

__all__ = ["DEFAULT_TYPES", "available_encodings", "compress"]

#: What is compressed by default: text and the structured text formats. An entry
#: ending in "/*" takes every subtype; one starting with "*+" every type with that
#: structured-syntax suffix.
DEFAULT_TYPES = (
    "text/*",
    "application/json",
    "application/javascript",
    "application/xml",
    "application/x-www-form-urlencoded",
    "application/wasm",
    "image/svg+xml",
    "font/ttf",
    "font/otf",
    "*+json",
    "*+xml",
)
#: The server's order of preference among codings the client weighs the same.
PREFERENCE = ("zstd", "br", "gzip")
_NO_BODY = frozenset({204, 304})
_CACHE_LIMIT = 256


class _Stream(Protocol):
    """One streamed body's compressor: ``piece`` returns what to send now."""

    def piece(self, data: bytes) -> bytes: ...
    def finish(self) -> bytes: ...


class _Coding:
    """A content coding: whole-body compression and a streaming compressor."""

    def __init__(self, name: str, whole: Callable[[bytes], bytes], stream: Callable[[], _Stream]) -> None:
        self.name = name
        self.whole = whole
        self.stream = stream


class _Zlib:
    def __init__(self, level: int) -> None:
        self._obj = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: the gzip wrapper

    def piece(self, data: bytes) -> bytes:
        return self._obj.compress(data) + self._obj.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._obj.flush(zlib.Z_FINISH)


def _gzip(level: int) -> _Coding:
    def whole(body: bytes) -> bytes:
        obj = zlib.compressobj(level, zlib.DEFLATED, 31)
        return obj.compress(body) + obj.flush()

    return _Coding("gzip", whole, lambda: _Zlib(level))


def _brotli(quality: int) -> _Coding | None:
    try:
        import brotli
    except ImportError:
        return None

    class Stream:
        def __init__(self) -> None:
            self._obj = brotli.Compressor(quality=quality)

        def piece(self, data: bytes) -> bytes:
            out: bytes = self._obj.process(data) + self._obj.flush()
            return out

        def finish(self) -> bytes:
            out: bytes = self._obj.finish()
            return out

    def whole(body: bytes) -> bytes:
        out: bytes = brotli.compress(body, quality=quality)
        return out

    return _Coding("br", whole, Stream)


def _zstd(level: int) -> _Coding | None:
    try:
        import zstandard
    except ImportError:
        return None
    compressor = zstandard.ZstdCompressor(level=level)

    class Stream:
        def __init__(self) -> None:
            self._obj = zstandard.ZstdCompressor(level=level).compressobj()

        def piece(self, data: bytes) -> bytes:
            out: bytes = self._obj.compress(data) + self._obj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            return out

        def finish(self) -> bytes:
            out: bytes = self._obj.flush()
            return out

    def whole(body: bytes) -> bytes:
        out: bytes = compressor.compress(body)
        return out

    return _Coding("zstd", whole, Stream)


def available_encodings() -> list[str]:
    """The codings this installation can produce, in the server's preference order."""
    found = [c.name for c in (_zstd(3), _brotli(4)) if c is not None]
    return [*found, "gzip"]


def compress(
    *,
    minimum_size: int = 500,
    gzip_level: int = 6,
    brotli_quality: int = 4,
    zstd_level: int = 3,
    encodings: Sequence[str] | None = None,
    content_types: Sequence[str] = DEFAULT_TYPES,
    thread_threshold: int = 1 << 20,
) -> Middleware:
    """A compression middleware.

    ``minimum_size``: smaller bodies are sent as they are (compression would not pay
    for its header). ``gzip_level`` (1-9), ``brotli_quality`` (0-11), ``zstd_level``
    (1-22): speed against size; the defaults favour speed, as for dynamic answers.
    ``encodings``: the codings offered, of "zstd", "br", "gzip" (default: those
    installed); naming one whose package is missing is an error. ``content_types``:
    what is compressed (see ``DEFAULT_TYPES``). ``thread_threshold``: whole bodies
    this large or larger are compressed in the thread pool.
    """
    _check_range("gzip_level", gzip_level, 1, 9)
    _check_range("brotli_quality", brotli_quality, 0, 11)
    _check_range("zstd_level", zstd_level, 1, 22)
    _check_range("minimum_size", minimum_size, 0, None)
    _check_range("thread_threshold", thread_threshold, 0, None)
    makers: dict[str, Callable[[], _Coding | None]] = {
        "zstd": lambda: _zstd(zstd_level),
        "br": lambda: _brotli(brotli_quality),
        "gzip": lambda: _gzip(gzip_level),
    }
    wanted = list(PREFERENCE) if encodings is None else list(encodings)
    codings: dict[str, _Coding] = {}
    for name in wanted:
        if name not in makers:
            raise ValueError(f"compress(): unknown encoding {name!r}; choose from zstd, br, gzip")
        coding = makers[name]()
        if coding is None:
            if encodings is not None:
                package = {"zstd": "zstandard", "br": "brotli"}[name]
                raise ValueError(
                    f"compress(): {name!r} needs the {package!r} package (pip install {package})"
                )
            continue
        codings[name] = coding
    if not codings:
        raise ValueError("compress(): no encoding to offer")
    order = [name for name in PREFERENCE if name in codings]
    compressible = _type_matcher(content_types)
    chosen: dict[str, _Coding | None] = {}

    def choose(accept: str) -> _Coding | None:
        # Clients send a handful of distinct values: each is weighed once.
        if accept in chosen:
            return chosen[accept]
        name = negotiate(accept, order)
        coding = codings[name] if name is not None else None
        if len(chosen) >= _CACHE_LIMIT:
            chosen.clear()
        chosen[accept] = coding
        return coding

    async def compression_middleware(request: Any, call_next: CallNext) -> AnyResponse:
        accept = request.headers.get("accept-encoding", "")
        response = await call_next(request)
        if not _eligible(response, compressible, minimum_size):
            return response
        _add_vary(response)
        coding = choose(accept) if accept else None
        if coding is None:
            return response
        if isinstance(response, StreamingResponse):
            response.content = _compressed(response, response.content, coding.stream())
            response.content_length = None
        else:
            body = response.body
            if len(body) >= thread_threshold:
                response.body = await run_in_thread(coding.whole, body)
            else:
                response.body = coding.whole(body)
        response.set_header("Content-Encoding", coding.name)
        etag = response.get_header("etag")
        if etag is not None and not etag.startswith("W/"):
            response.set_header("ETag", f"W/{etag}")
        return response

    return compression_middleware


def negotiate(accept: str, order: Sequence[str]) -> str | None:
    """The coding of ``order`` the ``Accept-Encoding`` value weighs highest (ties to
    the earlier in ``order``), or None when none is acceptable (RFC 9110, 12.5.3)."""
    weights: dict[str, float] = {}
    for item in accept.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = -1.0
        if 0.0 <= q <= 1.0:
            weights[name] = q
    best: str | None = None
    best_q = 0.0
    for name in order:
        q = weights.get(name, weights.get("*", 0.0))
        if q > best_q:
            best, best_q = name, q
    return best


def _eligible(response: AnyResponse, compressible: Callable[[str], bool], minimum: int) -> bool:
    if response.status < 200 or response.status in _NO_BODY or response.status == 206:
        return False
    if (
        response.get_header("content-encoding") is not None
        or response.get_header("content-range") is not None
    ):
        return False
    cache_control = response.get_header("cache-control")
    if cache_control is not None and "no-transform" in cache_control.lower():
        return False
    content_type = response.content_type
    if content_type is None or not compressible(content_type):
        return False
    if isinstance(response, StreamingResponse):
        length = response.content_length
        return length is None or length >= minimum
    return len(response.body) >= minimum


def _add_vary(response: AnyResponse) -> None:
    vary = response.get_header("vary")
    if vary is None:
        response.set_header("Vary", "Accept-Encoding")
    elif vary.strip() != "*" and "accept-encoding" not in {v.strip().lower() for v in vary.split(",")}:
        response.set_header("Vary", f"{vary}, Accept-Encoding")


def _type_matcher(content_types: Sequence[str]) -> Callable[[str], bool]:
    if isinstance(content_types, str):
        raise TypeError("compress(): content_types is a list of media types")
    exact = {t.lower() for t in content_types if not t.endswith("/*") and not t.startswith("*+")}
    prefixes = tuple(t[:-1].lower() for t in content_types if t.endswith("/*"))
    suffixes = tuple(t[1:].lower() for t in content_types if t.startswith("*+"))

    def compressible(content_type: str) -> bool:
        media = content_type.partition(";")[0].strip().lower()
        return media in exact or media.startswith(prefixes) or media.endswith(suffixes)

    return compressible


async def _compressed(
    response: StreamingResponse, content: Content, stream: _Stream
) -> AsyncGenerator[bytes, None]:
    try:
        if isinstance(content, AsyncIterable):
            async for piece in content:
                out = stream.piece(response._encode(piece))
                if out:
                    yield out
        else:
            for piece in content:
                out = stream.piece(response._encode(piece))
                if out:
                    yield out
        yield stream.finish()
    finally:
        await _close(content)


def _check_range(name: str, value: int, low: int, high: int | None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"compress(): {name} must be an int {bound}, got {value!r}")
