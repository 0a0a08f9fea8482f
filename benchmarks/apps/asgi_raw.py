"""A raw ASGI app (no framework), served by uvicorn and by Granian's ASGI interface.

Like every peer it serialises the JSON body per request.
"""

import json

HELLO = b"Hello, World!"
TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/json":
        body = json.dumps({"message": "Hello, World!"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    else:
        headers, body = TEXT_HEADERS, HELLO
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
