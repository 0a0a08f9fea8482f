"""Drive the core's HTTP/2 in memory, as core_path.py drives its HTTP/1.1: one h2c
connection (prior knowledge) whose preface and SETTINGS were exchanged before the
count, then N reads (no sockets, no load generator). Counted by instructions.py:

    .venv/bin/python benchmarks/micro/instructions.py h2_plaintext h2_post

Scenarios (core_path.py's app and defaults):

- ``h2_plaintext``: 16 HEADERS frames per read, each a GET of ``/`` (the ``def``
  handler answering a str) on a stream of its own (the count is per request)
- ``h2_post``: one stream per read, a POST of ``/upload`` as a HEADERS frame and a
  DATA frame of 1 KiB that ends the stream (the ``async def`` handler reading the
  body, as in core_path's ``post1k``)
- ``h2_asgi``: one stream per read, a GET of ``/`` served by core_path's raw ASGI
  app hosted by veter (``AsgiApp``, as core_path's ``asgi``)

The client's bytes come from benchmarks/suite/h2c.py: HPACK literals never indexed
and never Huffman-coded, so every request's header block is the same bytes, only the
stream ids differ. The reads are built before the count, READS_MADE of them
(instructions.py sets it to its larger count in both runs, so that building them
costs both the same and drops out of the difference).

When the core does not answer the preface with HTTP/2 (a SETTINGS frame), the
script says what it answered and exits with NOT_HTTP2. After the counted reads one
more read is served and its answers checked (a 200 and the expected body on each of
its streams, no GOAWAY or RST_STREAM), so what was counted was the good path.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import itertools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core_path import NullTransport, _app, _asgi_app

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from suite import h2c

#: The exit status when the core answered the preface with something else than HTTP/2.
NOT_HTTP2 = 3
AUTHORITY = "127.0.0.1:40000"
_BODY = b"x" * 1024
#: Loop passes allowed for the answer of one read to be written (the core may write
#: after the read, from a call_soon) before the check gives up.
_PASSES = 100


@dataclass(frozen=True)
class H2Scenario:
    request: Callable[[int], bytes]  # a request's frames on the given stream id
    per_read: int  # requests (streams) in one read
    answer: bytes  # the body each request is answered with
    may_suspend: bool = False  # the handler may become a task: wait for it after each read
    hosted: bool = False  # served by core_path's raw ASGI app, hosted


H2_SCENARIOS: dict[str, H2Scenario] = {
    "h2_plaintext": H2Scenario(lambda stream: h2c.get(stream, "/", AUTHORITY), 16, b"Hello, World!"),
    "h2_post": H2Scenario(lambda stream: h2c.post(stream, "/upload", AUTHORITY, _BODY), 1, b"1024", may_suspend=True),
    "h2_asgi": H2Scenario(
        lambda stream: h2c.get(stream, "/", AUTHORITY), 1, b"Hello, World!", may_suspend=True, hosted=True
    ),
}


class _Capture(NullTransport):
    """NullTransport that keeps its last writes (a bounded deque: ``write`` stays a C
    function, and old writes are freed as they would be)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: collections.deque[bytes] = collections.deque(maxlen=64)
        self.write = self.written.append  # type: ignore[method-assign]

    def take(self) -> bytes:
        out = b"".join(self.written)
        self.written.clear()
        return out


class NotHttp2Error(RuntimeError):
    """The core answered the preface with something other than HTTP/2."""


def _reads(scenario: H2Scenario, count: int, first_stream: int) -> list[bytes]:
    streams = itertools.count(first_stream, 2)
    return [b"".join(scenario.request(next(streams)) for _ in range(scenario.per_read)) for _ in range(count)]


async def _settle(conn: Any, transport: _Capture, done: Callable[[bytes], bool]) -> bytes:
    """Let the loop run until what was written satisfies `done` (the core may write
    from a call_soon); what was written."""
    seen = b""
    for _ in range(_PASSES):
        await asyncio.sleep(0)
        seen += transport.take()
        if done(seen) and not getattr(conn, "in_flight", 0):
            return seen
    return seen


async def _handshake(conn: Any, transport: _Capture) -> None:
    """Preface, SETTINGS and windows opened as h2load opens them; the server's SETTINGS
    checked, then acknowledged."""
    conn.data_received(h2c.PREFACE + h2c.open_windows())
    answer = await _settle(conn, transport, lambda seen: len(seen) >= 9 or seen.startswith(b"HTTP/"))
    first = next(h2c.frames(answer), None)
    if first is None or first[0] != h2c.SETTINGS or first[2] != 0:
        raise NotHttp2Error(f"the core answered the HTTP/2 preface with {answer[:80]!r}")
    conn.data_received(h2c.settings(ack=True))
    await _settle(conn, transport, lambda seen: True)


def _check(scenario: H2Scenario, streams: list[int], answer: bytes) -> None:
    """Every stream answered 200 with the expected body, and nothing refused."""
    statuses: dict[int, int | None] = {}
    bodies: dict[int, bytes] = collections.defaultdict(bytes)
    ended: set[int] = set()
    for kind, flags, stream, payload in h2c.frames(answer):
        if kind in (h2c.GOAWAY, h2c.RST_STREAM):
            raise RuntimeError(f"the core sent frame type {kind} on stream {stream}: {payload[:40]!r}")
        if kind == h2c.HEADERS and stream not in statuses:
            statuses[stream] = h2c.status_of(flags, payload)
        elif kind == h2c.DATA:
            bodies[stream] += payload
        if kind in (h2c.HEADERS, h2c.DATA) and flags & h2c.END_STREAM:
            ended.add(stream)
    for stream in streams:
        got = (statuses.get(stream), bodies.get(stream), stream in ended)
        if got != (200, scenario.answer, True):
            raise RuntimeError(f"stream {stream}: (status, body, ended) {got}, wanted (200, {scenario.answer!r}, True)")


async def drive(scenario: H2Scenario, reads: int, made: int) -> None:
    if scenario.hosted:
        from veter.hosted import AsgiApp

        app: Any = AsgiApp(_asgi_app)
    else:
        app = _app()
    conn = app.build_dispatcher()()
    transport = _Capture()
    conn.connection_made(transport)
    await _handshake(conn, transport)
    all_reads = _reads(scenario, made + 1, first_stream=1)
    counted, last = all_reads[:reads], all_reads[made]
    # As core_path.py: what start-up made is kept out of the collector's way.
    gc.collect()
    gc.freeze()
    data_received: Callable[[bytes], None] = conn.data_received
    written = transport.written
    if not scenario.may_suspend:
        # The reads are made from C, as uvloop makes them (see core_path.py); each is
        # answered before data_received returns (checked: no loop pass runs between).
        written.clear()
        collections.deque(map(data_received, counted), maxlen=0)
        if reads and not written:
            raise RuntimeError("the answers of a scenario without may_suspend were not written during the reads")
    else:
        for data in counted:
            written.clear()
            data_received(data)
            # Loop passes until the answer is written: a stream's request reaches its
            # handler, and its answer the socket, from later passes (in_flight does
            # not count a stream until its handler runs).
            passes = 0
            while not written or conn.in_flight:
                await asyncio.sleep(0)
                passes += 1
                if passes > _PASSES:
                    raise RuntimeError(f"no answer written within {_PASSES} loop passes of a read")
    await _settle(conn, transport, lambda seen: True)
    transport.take()
    first = 1 + 2 * made * scenario.per_read
    streams = [first + 2 * i for i in range(scenario.per_read)]
    data_received(last)
    last_id = streams[-1]
    answer = await _settle(conn, transport, lambda seen: _ends(seen, last_id))
    _check(scenario, streams, answer)


def _ends(seen: bytes, stream: int) -> bool:
    return any(s == stream and flags & h2c.END_STREAM for kind, flags, s, _ in h2c.frames(seen) if kind < 2)


def main() -> None:
    import uvloop

    scenario = H2_SCENARIOS[os.environ.get("SCENARIO", "h2_plaintext")]
    reads = int(os.environ.get("N", "100000"))
    made = int(os.environ.get("READS_MADE", str(reads)))
    if made < reads:
        raise SystemExit(f"READS_MADE ({made}) is under N ({reads})")
    try:
        uvloop.run(drive(scenario, reads, made))
    except NotHttp2Error as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(NOT_HTTP2) from None


if __name__ == "__main__":
    main()
