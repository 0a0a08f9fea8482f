"""One app on each front end, for the body-framing matrix (tests/e2e/test_body_framing.py).

``native`` is a ``veter.App`` (``/collected``: the body read before the handler runs;
``/streamed``: a ``stream_body=True`` route), ``asgi`` a raw ASGI 3 app and ``wsgi``
a raw WSGI app. Each does what the request's query asks:

- ``read=all|part|none``: read the whole body, its first piece (up to ``PART``
  bytes for WSGI), or nothing;
- ``answer=sized|streamed``: answer with a ``Content-Length`` or in two pieces.

and answers ``v=<HTTP version> n=<bytes read> sha=<SHA-256 of them> end=<how the
body ended>``: ``whole`` (the app saw its end), ``more`` (it stopped before), or
``disconnect`` (``receive`` said the client left, ``wsgi.input`` raised).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import veter

#: What a WSGI app reading ``part`` of the body asks ``wsgi.input`` for.
PART = 1000


def summary(version: str, read: bytes, end: str) -> bytes:
    digest = hashlib.sha256(read).hexdigest()
    return f"v={version} n={len(read)} sha={digest} end={end}".encode()


def pieces(body: bytes) -> list[bytes]:
    """The answer in two pieces (a streamed answer)."""
    half = len(body) // 2
    return [body[:half], body[half:]]


# -- native -------------------------------------------------------------------------

native = veter.App()


def native_answer(request: veter.Request, text: bytes) -> veter.Response | veter.StreamingResponse:
    if request.query.get("answer") == "streamed":

        async def gen() -> AsyncIterator[bytes]:
            for piece in pieces(text):
                yield piece

        return veter.StreamingResponse(gen(), content_type="text/plain")
    return veter.Response(text, content_type="text/plain")


@native.route("/collected", methods=["GET", "POST"])
async def collected(request: veter.Request) -> veter.Response | veter.StreamingResponse:
    body = await request.body()
    how = request.query.get("read", "all")
    read = body if how == "all" else body[:PART] if how == "part" else b""
    end = "whole" if how == "all" else "more"
    return native_answer(request, summary(request.http_version, read, end))


@native.route("/streamed", methods=["GET", "POST"], stream_body=True)
async def streamed(request: veter.Request) -> veter.Response | veter.StreamingResponse:
    how = request.query.get("read", "all")
    read = b""
    end = "more"
    if how != "none":
        stream = request.stream()
        end = "whole"
        try:
            async for piece in stream:
                read += piece
                if how == "part":
                    end = "more"
                    break
        except ConnectionResetError:
            end = "disconnect"
    return native_answer(request, summary(request.http_version, read, end))


# -- ASGI ---------------------------------------------------------------------------


async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    how = query.get("read", "all")
    read = b""
    end = "more"
    while how != "none":
        message = await receive()
        if message["type"] == "http.disconnect":
            end = "disconnect"
            break
        read += message.get("body", b"")
        if not message.get("more_body", False):
            end = "whole"
            break
        if how == "part":
            break
    text = summary(scope["http_version"], read, end)
    streamed = query.get("answer") == "streamed"
    headers = [(b"content-type", b"text/plain")]
    if not streamed:
        headers.append((b"content-length", str(len(text)).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if streamed:
        first, second = pieces(text)
        await send({"type": "http.response.body", "body": first, "more_body": True})
        await send({"type": "http.response.body", "body": second})
    else:
        await send({"type": "http.response.body", "body": text})


# -- WSGI ---------------------------------------------------------------------------


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    how = query.get("read", "all")
    stream = environ["wsgi.input"]
    read = b""
    end = "more"
    try:
        if how == "all":
            read = stream.read()
            end = "whole"
        elif how == "part":
            read = stream.read(PART)
    except OSError:
        end = "disconnect"
    version = environ["SERVER_PROTOCOL"].removeprefix("HTTP/")
    text = summary(version, read, end)
    headers = [("Content-Type", "text/plain")]
    if query.get("answer") == "streamed":
        start_response("200 OK", headers)
        return iter(pieces(text))
    start_response("200 OK", [*headers, ("Content-Length", str(len(text)))])
    return [text]
