"""A raw ASGI app (no framework), served by uvicorn and by Granian's ASGI interface.

Like every peer it serialises the JSON body per request.
"""

import asyncio
import json
import time

HELLO = b"Hello, World!"
TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


def spin(seconds: float) -> None:
    """Burns `seconds` of this thread's CPU time (the overload scenario's work)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def _body_length(receive) -> int:
    length, more = 0, True
    while more:
        message = await receive()
        length += len(message.get("body", b""))
        more = message.get("more_body", False)
    return length


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/sleep50":
        await asyncio.sleep(0.05)
        headers, body = [TEXT_HEADERS[0], (b"content-length", b"2")], b"ok"
    elif scope["path"] == "/cpu5":
        spin(0.005)
        headers, body = [TEXT_HEADERS[0], (b"content-length", b"2")], b"ok"
    elif scope["path"] == "/json":
        body = json.dumps({"message": "Hello, World!"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    elif scope["path"] == "/upload":
        # The http2 scenario's POST: the body read, its length answered.
        body = b"%d" % await _body_length(receive)
        headers = [TEXT_HEADERS[0], (b"content-length", b"%d" % len(body))]
    else:
        headers, body = TEXT_HEADERS, HELLO
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
