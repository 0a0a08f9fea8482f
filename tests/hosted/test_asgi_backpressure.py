"""A hosted app's ``send`` that waits for the transport's room (the client stopped
reading) is let go when the connection is lost: the app goes on, its later sends go
nowhere and ``receive`` says ``http.disconnect``, as when the client leaves at any
other moment. Before, the wait was never ended and the app's task hung for good
(found by the HTTP/2 differential fuzzer: a stream reset while its answer waited for
the client's window)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.test_protocol import drive, get
from veter.hosted import AsgiApp


@pytest.mark.parametrize("pieces", [1, 3])
async def test_a_send_waiting_for_room_ends_when_the_client_leaves(pieces: int) -> None:
    seen: list[str] = []
    ended = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for i in range(pieces):
                await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
                seen.append(f"sent {i}")
            await send({"type": "http.response.body", "body": b""})
            # The request's (empty) body, then the client's leaving.
            seen.append((await receive())["type"])
            seen.append((await receive())["type"])
        finally:
            ended.set()

    transport, conn = await drive(AsgiApp(app), get("/"))
    # The client stopped reading before the app's first piece: every send waits.
    conn.pause_writing()
    while not transport.data:
        await transport.changed()
    assert not ended.is_set()
    conn.connection_lost(None)
    await asyncio.wait_for(ended.wait(), 5)
    assert seen == [f"sent {i}" for i in range(pieces)] + ["http.request", "http.disconnect"]
