"""The differential fuzzer's instrumented ASGI app (tests/hosted/fuzz/): it does
what the request's query asks (tests/hosted/apps/probe.py) and records what it
received: the scope's fields, the body's length and digest, and the order of the
body's end and ``http.disconnect``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tests.hosted.apps.probe import FENCE_TIMEOUT, RECEIVE_TIMEOUT, Behaviour, Store, digest
from tests.polling import eventually

store = Store()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    if scope["type"] != "http":
        return
    if scope["path"] == "/fence":
        # Past the wait, the fence's answer names the calls still running.
        with contextlib.suppress(AssertionError):
            await eventually(store.idle, FENCE_TIMEOUT, "the probe app idle")
        body = store.drain()
        length = str(len(body)).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", length)]})
        await send({"type": "http.response.body", "body": body})
        return
    behaviour = Behaviour.parse(scope["query_string"].decode("latin-1"))
    token = store.start(behaviour.id)
    record: dict[str, Any] = {
        "id": behaviour.id,
        "http_version": scope["http_version"],
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode("latin-1"),
        "headers": [[n.decode("latin-1"), v.decode("latin-1")] for n, v in scope["headers"]],
        "events": [],
    }
    try:
        await _read(receive, behaviour, record)
        await _answer(send, behaviour, behaviour.body(), record)
        if behaviour.after:
            record["after"] = await _next(receive)
    finally:
        store.finish(token, record)


async def _next(receive: Any) -> str:
    try:
        message = await asyncio.wait_for(receive(), RECEIVE_TIMEOUT)
    except TimeoutError:
        return "timeout"
    if message["type"] == "http.request":
        return "more" if message.get("more_body") else "end"
    return str(message["type"])


async def _read(receive: Any, behaviour: Behaviour, record: dict[str, Any]) -> None:
    if behaviour.read == "none":
        return
    limit = behaviour.part if behaviour.read == "part" else None
    data = bytearray()
    while limit is None or len(data) < limit:
        try:
            message = await asyncio.wait_for(receive(), RECEIVE_TIMEOUT)
        except TimeoutError:
            record["events"].append("timeout")
            break
        if message["type"] == "http.disconnect":
            record["events"].append("disconnect")
            break
        data += message.get("body", b"")
        if not message.get("more_body"):
            # In "part" mode the end is only seen when the body is shorter than the
            # part; how the body was cut into messages is each server's own.
            if limit is None or len(data) < limit:
                record["events"].append("end")
            break
    kept = bytes(data if limit is None else data[:limit])
    record["body_len"] = len(kept)
    record["body_sha"] = digest(kept)


async def _answer(send: Any, behaviour: Behaviour, body: bytes, record: dict[str, Any]) -> None:
    headers = [(b"content-type", b"application/octet-stream"), (b"x-probe-id", behaviour.id.encode())]
    try:
        if behaviour.answer == "one":
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if behaviour.answer == "sized":
            headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        pieces = behaviour.split()
        for i, piece in enumerate(pieces):
            more = i < len(pieces) - 1
            await send({"type": "http.response.body", "body": piece, "more_body": more})
    except Exception as exc:  # noqa: BLE001 - what send raised is part of what the app saw
        record["send_error"] = type(exc).__name__
