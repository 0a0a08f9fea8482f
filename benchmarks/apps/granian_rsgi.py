"""A raw RSGI app for Granian's native interface."""

import json

HELLO = "Hello, World!"
TEXT_HEADERS = [("content-type", "text/plain; charset=utf-8")]
JSON_HEADERS = [("content-type", "application/json")]


async def app(scope, proto):
    if scope.path == "/upload":
        # The http2 scenario's POST: the body read, its length answered.
        proto.response_str(200, TEXT_HEADERS, str(len(await proto())))
    elif scope.path == "/json":
        proto.response_bytes(200, JSON_HEADERS, json.dumps({"message": HELLO}).encode())
    else:
        proto.response_str(200, TEXT_HEADERS, HELLO)
