"""A raw ASGI 3 app that exercises the spec: each path tries one part of it.

``/events`` answers what the app saw that the client cannot (disconnects, the
errors its ``send`` raised), so tests can check it from outside.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from typing import Any

from tests.hosted.apps import sendfile_count

events: list[str] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                scope["state"]["started"] = "yes"
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    handler = ROUTES.get(path) or (scope_of if path.startswith("/scope") else not_found)
    await handler(scope, receive, send)


async def text(send: Any, body: bytes, status: int = 200, headers: list[Any] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": headers or [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        assert message["type"] == "http.request", message
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def hello(scope: Any, receive: Any, send: Any) -> None:
    await text(send, b"Hello, world!")


async def echo(scope: Any, receive: Any, send: Any) -> None:
    await text(send, await read_body(receive))


async def echo_halves(scope: Any, receive: Any, send: Any) -> None:
    """The body back in two ``http.response.body`` messages (a streamed answer)."""
    body = await read_body(receive)
    half = len(body) // 2
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body[:half], "more_body": True})
    await send({"type": "http.response.body", "body": body[half:]})


async def pieces(scope: Any, receive: Any, send: Any) -> None:
    """How the body arrived: the sizes of its messages."""
    sizes = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            events.append(f"pieces: disconnect after {sum(sizes)} bytes")
            return
        sizes.append(len(message["body"]))
        if not message.get("more_body"):
            break
    await text(send, json.dumps({"pieces": len(sizes), "total": sum(sizes)}).encode())


async def scope_of(scope: Any, receive: Any, send: Any) -> None:
    shown = {k: v for k, v in scope.items() if k != "headers"}
    shown["headers"] = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in scope["headers"]]
    for key in ("raw_path", "query_string"):
        shown[key] = scope[key].decode("latin-1")
    # An app may change its scope: the next request's must not show it.
    scope["client"], scope["http_version"] = ("changed by the app", 0), "9"
    scope["method"], scope["query_string"] = "CHANGED", b"changed=1"
    await text(send, json.dumps(shown).encode(), headers=[(b"content-type", b"application/json")])


async def stream(scope: Any, receive: Any, send: Any) -> None:
    query = dict(p.split("=") for p in scope["query_string"].decode().split("&") if p)
    count, size = int(query.get("n", "3")), int(query.get("size", "6"))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    for i in range(count):
        await send({"type": "http.response.body", "body": b"%d" % (i % 10) * size, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def sized_stream(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"10")]})
    await send({"type": "http.response.body", "body": b"01234", "more_body": True})
    await send({"type": "http.response.body", "body": b"56789"})


async def slow(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(0.05)
    await text(send, b"slow", status=201)


SENT_FILE = os.path.join(tempfile.gettempdir(), f"veter-raw-pathsend-{os.getpid()}.txt")
with open(SENT_FILE, "wb") as _fh:
    _fh.write(b"from a file\n" * 1000)


#: Larger than a loopback socket takes at once: the sender must wait for the reader.
BIG_SIZE = 24 * 1024 * 1024
BIG_FILE = sendfile_count.big_file("raw-big", BIG_SIZE)


async def pathsend(scope: Any, receive: Any, send: Any) -> None:
    target = {
        "/pathsend": SENT_FILE,
        "/pathsend-big": BIG_FILE,
        "/pathsend-relative": "x.txt",
        "/pathsend-missing": SENT_FILE + ".no",
    }
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    try:
        await send({"type": "http.response.pathsend", "path": target[scope["path"]]})
    except (ValueError, OSError) as exc:
        events.append(f"pathsend: {exc}")
        raise


async def sendfile_counted(scope: Any, receive: Any, send: Any) -> None:
    await text(send, json.dumps(sendfile_count.counted).encode())


async def block(scope: Any, receive: Any, send: Any) -> None:
    time.sleep(0.4)  # noqa: ASYNC251 - blocks the loop on purpose: the lag monitor names it
    await text(send, b"blocked")


async def boom(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("boom before start")


async def boom_after_pause(scope: Any, receive: Any, send: Any) -> None:
    # Suspends first: the failure comes from a task the connection no longer waits
    # on (with eager tasks, the other routes here fail during the eager start).
    await asyncio.sleep(0)
    raise RuntimeError("boom after a pause")


async def boom_after_answer(scope: Any, receive: Any, send: Any) -> None:
    await text(send, b"answered")
    raise RuntimeError("boom after the answer")


async def boom_after_start(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise RuntimeError("boom after start")


async def boom_mid_stream(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"first piece", "more_body": True})
    await asyncio.sleep(0.01)
    raise RuntimeError("boom mid-stream")


async def no_answer(scope: Any, receive: Any, send: Any) -> None:
    return None


async def tries(send: Any, message: dict[str, Any]) -> None:
    """Sends ``message``; what it raised goes to ``events`` and the app answers 200."""
    try:
        await send(message)
    except Exception as exc:  # noqa: BLE001 - the test reads it from /events
        events.append(f"{type(exc).__name__}: {exc}")
        await text(send, b"refused")
        return
    events.append("accepted")


async def bad_status(scope: Any, receive: Any, send: Any) -> None:
    await tries(send, {"type": "http.response.start", "status": 1000, "headers": []})


async def bad_header(scope: Any, receive: Any, send: Any) -> None:
    await tries(
        send, {"type": "http.response.start", "status": 200, "headers": [(b"x-evil", b"a\r\nset-cookie: b")]}
    )


async def wrong_type(scope: Any, receive: Any, send: Any) -> None:
    await tries(send, {"type": "http.response.strat", "status": 200})


async def str_header(scope: Any, receive: Any, send: Any) -> None:
    await tries(send, {"type": "http.response.start", "status": 200, "headers": [("x-name", "value")]})


async def send_after_end(scope: Any, receive: Any, send: Any) -> None:
    await text(send, b"done")
    try:
        await send({"type": "http.response.body", "body": b"more"})
    except RuntimeError as exc:
        events.append(f"RuntimeError: {exc}")


async def wrong_length(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"10")]})
    await send({"type": "http.response.body", "body": b"short"})


async def after_response(scope: Any, receive: Any, send: Any) -> None:
    """After its answer, the app's receive() says http.disconnect at once."""
    await read_body(receive)
    await text(send, b"ok")
    message = await asyncio.wait_for(receive(), 5)
    events.append(f"after response: {message['type']}")


async def until_gone(scope: Any, receive: Any, send: Any) -> None:
    """Streams until the client leaves; then receive() says http.disconnect."""
    await read_body(receive)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    for _ in range(1000):
        await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
        await asyncio.sleep(0.005)
        if len(events) > 10_000:
            break
    message = await asyncio.wait_for(receive(), 5)
    events.append(f"until gone: {message['type']}")


async def wait_gone(scope: Any, receive: Any, send: Any) -> None:
    """Does not answer; receive() after the body waits for the client to leave."""
    await read_body(receive)
    message = await asyncio.wait_for(receive(), 10)
    events.append(f"wait gone: {message['type']}")


async def close_header(scope: Any, receive: Any, send: Any) -> None:
    await text(send, b"bye", headers=[(b"connection", b"close")])


async def see_events(scope: Any, receive: Any, send: Any) -> None:
    await text(send, json.dumps(events).encode(), headers=[(b"content-type", b"application/json")])


async def not_found(scope: Any, receive: Any, send: Any) -> None:
    await text(send, b"not here", status=404)


ROUTES = {
    "/": hello,
    "/echo": echo,
    "/echo-halves": echo_halves,
    "/pieces": pieces,
    "/scope": scope_of,
    "/stream": stream,
    "/sized-stream": sized_stream,
    "/slow": slow,
    "/block": block,
    "/pathsend": pathsend,
    "/pathsend-big": pathsend,
    "/sendfile-count": sendfile_counted,
    "/pathsend-relative": pathsend,
    "/pathsend-missing": pathsend,
    "/boom": boom,
    "/boom-after-start": boom_after_start,
    "/boom-after-pause": boom_after_pause,
    "/boom-after-answer": boom_after_answer,
    "/boom-mid-stream": boom_mid_stream,
    "/no-answer": no_answer,
    "/bad-status": bad_status,
    "/bad-header": bad_header,
    "/wrong-type": wrong_type,
    "/str-header": str_header,
    "/send-after-end": send_after_end,
    "/wrong-length": wrong_length,
    "/after-response": after_response,
    "/until-gone": until_gone,
    "/wait-gone": wait_gone,
    "/close": close_header,
    "/events": see_events,
}
