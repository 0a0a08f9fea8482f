"""The clocks a connection reads: the `Date` header and the access log's times.

The wall clock is read once a second of the monotonic clock, not once per read
(protocol.rs, `set_clock`): these tests check that what it shows is still the wall
clock's second, on a new connection and on one that stays open across a second.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

import veter
from veter.logs.files import open_log
from veter.testing import MemoryTransport, _ResponseReader


def _get() -> bytes:
    return b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"


def _date_of(transport: MemoryTransport) -> int:
    """The unix second of the one response written so far, then forgets it."""
    parsed = _ResponseReader(False).parse(bytes(transport.data), True)
    assert parsed is not None
    transport.data.clear()
    return int(parsedate_to_datetime(parsed[0].headers["date"]).timestamp())


def _asked(conn: veter._core.Connection, transport: MemoryTransport) -> tuple[int, int, int]:
    """(wall second before, the answer's Date second, wall second after) of one request."""
    before = int(time.time())
    conn.data_received(_get())
    after = int(time.time())
    return before, _date_of(transport), after


async def test_date_follows_the_wall_clock_on_one_connection() -> None:
    app = veter.App()
    app.add_route("/", lambda request: "hi")
    conn = app.build_dispatcher(app.config)()
    transport = MemoryTransport(conn, ("127.0.0.1", 1))
    conn.connection_made(transport)
    before, date, after = _asked(conn, transport)
    assert before <= date <= after
    # Past the next second of the wall clock (what is waited for is the clock, not
    # the server), the same connection answers with the new second.
    await asyncio.sleep(after + 1.01 - time.time())
    before2, date2, after2 = _asked(conn, transport)
    assert before2 <= date2 <= after2
    assert date2 > date
    conn.connection_lost(None)


async def test_access_log_times_are_the_wall_clock(tmp_path: Path) -> None:
    # The line's time is the last wall reading plus monotonic time since: it must
    # still fall between wall readings taken around the request, in the second the
    # wall clock was read in and in one read from the monotonic clock after it.
    app = veter.App()
    app.add_route("/", lambda request: "hi")
    path = tmp_path / "access.log"
    log = open_log(str(path))
    log.set_scheduler(lambda: None)  # flushed by close below
    conn = app.build_dispatcher(
        app.config.with_(access_log=str(path), access_log_format="json"), access_log=log
    )()
    transport = MemoryTransport(conn, ("127.0.0.1", 1))
    conn.connection_made(transport)
    spans = []
    for _ in range(3):
        before = time.time()
        conn.data_received(_get())
        spans.append((before, time.time()))
        await asyncio.sleep(0.3)  # spaced out: the later reads derive the time
    conn.connection_lost(None)
    log.close()
    times = [
        datetime.fromisoformat(json.loads(line)["time"]).timestamp() for line in path.read_text().splitlines()
    ]
    assert len(times) == len(spans)
    for logged, (before, after) in zip(times, spans, strict=True):
        # (The line's time has millisecond precision, truncated.)
        assert before - 0.002 <= logged <= after + 0.002
