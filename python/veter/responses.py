"""Response helpers. ``Response`` itself is implemented in Rust (``veter._core``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from veter._core import Response
from veter.streaming import StreamingResponse

__all__ = ["AnyResponse", "Response", "json", "redirect", "text", "to_response"]

#: What middleware sees from ``call_next``: a whole response or a streamed one.
AnyResponse = Response | StreamingResponse


def text(body: str, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A ``text/plain; charset=utf-8`` response."""
    return Response(body, status=status, headers=headers)


def json(
    data: Any,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    *,
    option: int | None = None,
) -> Response:
    """An ``application/json`` response; ``data`` is serialised with orjson.

    ``option`` is passed to ``orjson.dumps`` (e.g. ``orjson.OPT_INDENT_2``).
    """
    body = orjson.dumps(data) if option is None else orjson.dumps(data, option=option)
    return Response(body, status=status, headers=headers, content_type="application/json")


def redirect(location: str, status: int = 307, headers: Mapping[str, str] | None = None) -> Response:
    """A redirect to ``location`` (307 keeps the method; pass 301/302/303/308 as needed)."""
    if not 300 <= status <= 399:
        raise ValueError(f"redirect status must be 3xx, got {status}")
    merged = dict(headers or {})
    merged["Location"] = location
    return Response(b"", status=status, headers=merged)


def to_response(result: Any) -> AnyResponse:
    """Turn what a handler may return into a ``Response`` (the Rust core does the
    same on its fast path; this is for middleware, which works on ``Response``).
    A ``StreamingResponse`` passes through as it is (it has the same header methods)."""
    if isinstance(result, (Response, StreamingResponse)):
        return result
    if isinstance(result, str):
        return Response(result)
    if isinstance(result, bytes):
        return Response(result)
    if isinstance(result, (dict, list)):
        return Response(orjson.dumps(result), content_type="application/json")
    raise TypeError(f"handler returned {type(result).__name__}; return a Response, str, bytes, dict or list")
