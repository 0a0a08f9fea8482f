"""A raw ASGI 3 app with WebSockets: every message of the WebSocket spec (2.4),
the denial extension, and the errors; ``GET /events`` tells what the app saw."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

events: list[Any] = []


async def app(scope: Message, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        return
    if scope["type"] == "http":
        body = json.dumps(events).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return
    path = scope["path"][len(scope["root_path"]) :]  # root_path leads path (as uvicorn)
    first = await receive()
    assert first == {"type": "websocket.connect"}, first
    if path == "/scope":
        await send({"type": "websocket.accept"})
        keep = (
            "type",
            "asgi",
            "http_version",
            "scheme",
            "path",
            "raw_path",
            "query_string",
            "root_path",
            "subprotocols",
        )
        seen = {k: v.decode() if isinstance(v, bytes) else v for k, v in scope.items() if k in keep}
        seen["has_method"] = "method" in scope
        seen["extensions"] = sorted(scope.get("extensions", {}))
        seen["request_id"] = scope["state"].get("request_id")
        seen["header_names"] = [n.decode() for n, _ in scope["headers"]]
        await send({"type": "websocket.send", "text": json.dumps(seen)})
        await send({"type": "websocket.close", "code": 1000})
    elif path == "/echo":
        offered = scope["subprotocols"]
        await send(
            {
                "type": "websocket.accept",
                "subprotocol": offered[0] if offered else None,
                "headers": [(b"x-accepted", b"yes")],
            }
        )
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                events.append(["disconnect", message["code"], message.get("reason", "")])
                try:
                    await send({"type": "websocket.send", "text": "too late"})
                except OSError as exc:
                    events.append(["send after close", type(exc).__name__])
                return
            if message.get("text") is not None:
                await send({"type": "websocket.send", "text": "echo " + message["text"]})
            else:
                await send({"type": "websocket.send", "bytes": message["bytes"][::-1]})
    elif path == "/server-close":
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 4001, "reason": "bye now"})
    elif path == "/refuse":
        await send({"type": "websocket.close"})
    elif path == "/deny":
        await send(
            {
                "type": "websocket.http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"text/plain")],
            }
        )
        await send({"type": "websocket.http.response.body", "body": b"no ", "more_body": True})
        await send({"type": "websocket.http.response.body", "body": b"entry"})
    elif path == "/fail-before":
        raise RuntimeError("failed before accepting")
    elif path == "/fail-after":
        await send({"type": "websocket.accept"})
        raise RuntimeError("failed after accepting")
    elif path == "/bad-message":
        await send({"type": "websocket.accept"})
        try:
            await send({"type": "http.response.start", "status": 200})
        except RuntimeError as exc:
            events.append(["bad message", str(exc)])
        await send({"type": "websocket.close", "code": 1000})
    # Any other path: returns without accepting (403).
