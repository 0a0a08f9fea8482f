"""Server-Sent Events over a real socket: event framing, pings while idle, and the
source closed when the client goes away."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

import pytest

import veter
from veter.sse import Event

from .conftest import RunningServer, read_responses

Serve = Callable[..., RunningServer]


def test_events_and_pings(serve: Serve) -> None:
    app = veter.App()

    @app.get("/events")
    async def events(request: veter.Request) -> veter.EventSourceResponse:
        async def source() -> AsyncIterator[object]:
            yield "hello"
            await asyncio.sleep(0.25)  # long enough for pings every 0.05 s
            yield Event("two\nlines", event="update", id="7", retry=1000)
            yield {"n": 1}

        return veter.EventSourceResponse(source(), ping=0.05)

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
        (answer,), _ = read_responses(sock, 1)
    assert answer.headers["content-type"] == "text/event-stream"
    assert answer.headers["cache-control"] == "no-cache"
    assert answer.headers["transfer-encoding"] == "chunked"
    body = answer.content.decode()
    assert body.startswith("data: hello\n\n")
    assert body.endswith('event: update\nid: 7\nretry: 1000\ndata: two\ndata: lines\n\ndata: {"n":1}\n\n')
    assert body.count(": ping\n\n") >= 2, body


def test_source_closed_when_the_client_goes_away(serve: Serve) -> None:
    closed = threading.Event()
    app = veter.App()

    @app.get("/forever")
    async def forever(request: veter.Request) -> veter.EventSourceResponse:
        async def source() -> AsyncIterator[str]:
            try:
                while True:
                    yield "tick"
                    await asyncio.sleep(0.01)
            finally:
                closed.set()

        return veter.EventSourceResponse(source())

    server = serve(app)
    with server.connect() as sock:
        sock.sendall(b"GET /forever HTTP/1.1\r\nHost: t\r\n\r\n")
        seen = b""
        while b"data: tick" not in seen:  # the head may come in a read of its own
            chunk = sock.recv(4096)
            assert chunk, "closed before the first event"
            seen += chunk
    assert closed.wait(10), "the event source was not closed"


def test_bad_arguments() -> None:
    async def source() -> AsyncIterator[str]:
        yield "x"

    with pytest.raises(TypeError, match="async iterable"):
        veter.EventSourceResponse(["x"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ping"):
        veter.EventSourceResponse(source(), ping=0)
    with pytest.raises(ValueError, match="line break"):
        Event("x", event="a\nb").encode()
