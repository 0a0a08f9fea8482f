"""A raw RSGI app for Granian's native interface."""

import json

HELLO = "Hello, World!"
TEXT_HEADERS = [("content-type", "text/plain; charset=utf-8")]
JSON_HEADERS = [("content-type", "application/json")]


async def app(scope, proto):
    if scope.path == "/json":
        proto.response_bytes(200, JSON_HEADERS, json.dumps({"message": HELLO}).encode())
    else:
        proto.response_str(200, TEXT_HEADERS, HELLO)
