"""What a hosted ASGI app passes to ``send`` is read whatever objects its keys are:
the core matches the interned names by pointer first, so keys made at run time
(equal strings, other objects) and keys it does not know must read the same."""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from typing import Any

from tests.hosted.test_asgi_task import read
from tests.test_protocol import drive, get
from veter.hosted import AsgiApp


def fresh(name: str) -> str:
    """An equal string that is not the interned one."""
    made = "".join(list(name))
    assert made == name and made is not sys.intern(name)
    return made


async def test_keys_made_at_run_time_are_read_as_the_literal_ones() -> None:
    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        start = {fresh("type"): "http.response.start", fresh("status"): 200}
        start[fresh("headers")] = [(b"content-type", b"text/plain")]
        start["trailers"] = False  # a key the core does not read
        await send(start)
        await send({fresh("type"): "http.response.body", fresh("body"): b"one", fresh("more_body"): False})

    transport, _ = await drive(AsgiApp(app), get("/"))
    assert await read(transport, 1) == ["one"]
    transport.close()


async def test_a_message_without_its_type_is_an_error_in_send() -> None:
    raised: list[str] = []

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        try:
            await send({fresh("typ"): "http.response.start", "status": 200})
        except ValueError as err:
            raised.append(str(err))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    transport, _ = await drive(AsgiApp(app), get("/"))
    assert await read(transport, 1) == ["ok"]
    assert raised == ["ASGI message has no 'type' key"]
    transport.close()


async def test_every_forbidden_byte_at_every_place_of_a_header_is_an_error_in_send() -> None:
    """The core checks names and values a word at a time: each byte that may not be
    in a name (not a tchar) or a value (a control byte but HTAB, or DEL), at each
    place of a name and of a value up to three words long, is refused; every other
    byte there is taken."""
    tchar = set(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    refused: list[tuple[str, int, int]] = []
    taken: list[tuple[str, int, int]] = []

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        for length in (1, 7, 8, 9, 17, 24):
            for at in range(length):
                for b in range(256):
                    for part in ("name", "value"):
                        text = bytearray(b"n" * length)
                        text[at] = b
                        pair = (bytes(text), b"v") if part == "name" else (b"x-h", bytes(text))
                        # Every start is refused, so the answer stays unstarted: by
                        # the pair under test, or else by the bad name after it.
                        headers = [pair, (b"after pair", b"v")]
                        try:
                            await send({"type": "http.response.start", "status": 200, "headers": headers})
                        except ValueError as err:
                            (taken if "after pair" in str(err) else refused).append((part, at, b))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    transport, _ = await drive(AsgiApp(app), get("/"))
    assert await read(transport, 1) == ["ok"]
    transport.close()
    bad_value = {b for b in range(256) if (b < 0x20 and b != 0x09) or b == 0x7F}
    expected = {
        (part, at, b)
        for length in (1, 7, 8, 9, 17, 24)
        for at in range(length)
        for b in range(256)
        for part in ("name", "value")
        if (b not in tchar if part == "name" else b in bad_value)
    }
    assert set(refused) == expected
    assert not set(taken) & expected
    assert len(refused) + len(taken) == 2 * 256 * sum((1, 7, 8, 9, 17, 24))
