"""``wsgi.input`` and ``wsgi.errors`` on their own: the reads a WSGI app may make,
against a body that arrives in pieces from an event loop in another thread."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from veter.hosted.wsgi_io import ClientDisconnected, ErrorStream, InputStream


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def stream(loop: asyncio.AbstractEventLoop, pieces: list[bytes], *, cut: bool = False) -> InputStream:
    """An InputStream over ``pieces`` (the first handed over as an awaitable, as
    the bridge does with one the body is not in yet); ``cut``: the client leaves
    after the last piece."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1 or cut}
        for i, p in enumerate(pieces)
    ]
    if cut:
        messages.append({"type": "http.disconnect"})
    rest = iter(messages)

    async def receive() -> dict[str, Any]:
        return next(rest)

    return InputStream(receive, loop, receive())


BODY = [b"ab", b"c\nde", b"", b"f\n\ng", b"hij"]


def test_read_all(loop: asyncio.AbstractEventLoop) -> None:
    s = stream(loop, BODY)
    assert s.read() == b"abc\ndef\n\nghij"
    assert s.read() == b""
    assert s.exhausted


def test_sized_reads_span_pieces(loop: asyncio.AbstractEventLoop) -> None:
    s = stream(loop, BODY)
    assert [s.read(3), s.read(4), s.read(100), s.read(1)] == [b"abc", b"\ndef", b"\n\nghij", b""]


def test_readline_and_iteration(loop: asyncio.AbstractEventLoop) -> None:
    s = stream(loop, BODY)
    assert s.readline() == b"abc\n"
    assert s.readline(2) == b"de"
    assert list(s) == [b"f\n", b"\n", b"ghij"]


def test_readlines_with_hint(loop: asyncio.AbstractEventLoop) -> None:
    assert stream(loop, BODY).readlines() == [b"abc\n", b"def\n", b"\n", b"ghij"]
    assert stream(loop, BODY).readlines(5) == [b"abc\n", b"def\n"]


def test_no_body(loop: asyncio.AbstractEventLoop) -> None:
    async def receive() -> dict[str, Any]:
        raise AssertionError("an empty body is not fetched")

    s = InputStream(receive, loop, None)
    assert (s.read(), s.readline(), s.read(10)) == (b"", b"", b"")


def test_first_piece_arrived_is_read_without_the_loop(loop: asyncio.AbstractEventLoop) -> None:
    # What the bridge hands over once the body's first piece is in the core: a
    # done future. Only the pieces after it are fetched from the loop.
    fetched: list[bytes] = []

    async def receive() -> dict[str, Any]:
        fetched.append(b"two")
        return {"type": "http.request", "body": b"two", "more_body": False}

    first: asyncio.Future[dict[str, Any]] = loop.create_future()
    first.set_result({"type": "http.request", "body": b"one ", "more_body": True})
    s = InputStream(receive, loop, first)
    assert s.read(4) == b"one " and fetched == []
    assert s.read() == b"two" and fetched == [b"two"]


def test_client_gone_before_the_body_is_the_first_read_s_error(loop: asyncio.AbstractEventLoop) -> None:
    first: asyncio.Future[dict[str, Any]] = loop.create_future()
    first.set_result({"type": "http.disconnect"})

    async def receive() -> dict[str, Any]:
        raise AssertionError("nothing more is fetched")

    s = InputStream(receive, loop, first)  # not raised here, on the loop
    with pytest.raises(ClientDisconnected):
        s.read()


def test_client_leaving_mid_body_is_an_error(loop: asyncio.AbstractEventLoop) -> None:
    s = stream(loop, [b"abc"], cut=True)
    assert s.read(3) == b"abc"
    with pytest.raises(ClientDisconnected, match="before the whole request body"):
        s.read(1)


def test_errors_are_logged_a_line_at_a_time(caplog: pytest.LogCaptureFixture) -> None:
    errors = ErrorStream()
    with caplog.at_level(logging.ERROR, logger="veter.wsgi"):
        errors.write("one\ntw")
        errors.writelines(["o\n", "three"])
        assert [r.getMessage() for r in caplog.records] == ["one", "two"]
        errors.flush()
    assert [r.getMessage() for r in caplog.records] == ["one", "two", "three"]
