"""An open-loop load of GETs and POSTs that retries nothing, for lifecycle and proxy tests.

Requests start at a fixed rate whatever the server does (open loop), alternating
GET and POST (a proxy may retry a failed GET elsewhere and hide the loss; nobody
retries a POST). Most go over keep-alive connections taken from a pool, some over a
new connection, as a proxy's or a client library's pool would. Every request that
does not end in a 2xx answer with the right body counts as a failure, with its
reason: a non-2xx status, a reset, a refused connect, an early close, a timeout.
Nothing is retried, not even a request on a reused connection that the server
closed (the case clients usually retry silently, and the one a lifecycle event must
not cause).

The pool closes a connection idle for longer than ``idle_max`` itself, as a client
whose idle timeout is below the server's keep-alive timeout does.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import uvloop

__all__ = ["Check", "MixedLoad", "Outcome", "Payload"]

#: The body of POST number ``i``.
Payload = Callable[[int], bytes]
#: Checks a 2xx answer: (``i``, the body sent, the answer's headers with lower-case
#: names, its body); raises ValueError when the answer is not the right one.
Check = Callable[[int, bytes, dict[str, str], bytes], None]


def small_payload(i: int) -> bytes:
    return f"request {i} ".encode() + b"x" * 200


def echoed(i: int, payload: bytes, headers: dict[str, str], body: bytes) -> None:
    """The answer ends with the body sent (the supervised app's /echo)."""
    if payload and not body.endswith(payload):
        raise ValueError(f"POST answered with another body: {body[:80]!r}")


@dataclass(frozen=True)
class Outcome:
    started: float  # time.monotonic() when the request was due
    method: str
    error: str | None  # None: a 2xx answer with the right body
    pid: int | None = None  # the worker that answered, when the body starts "pid=N"
    latency: float = 0.0  # seconds from when it was due to its answer (or failure)
    number: int = -1  # the request's ``i``: its query string (``?i=N``) names it in logs


@dataclass
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def close(self) -> None:
        self.writer.close()


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    #: Successes so far, counted as they come: tests poll it, and counting a list of
    #: a hundred thousand outcomes each time would take the generator's GIL away.
    ok: int = 0

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        if outcome.error is None:
            self.ok += 1

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error is not None]

    def by_method(self) -> Counter[str]:
        return Counter(o.method for o in self.outcomes if o.error is None)

    def failures_between(self, start: float, end: float) -> list[Outcome]:
        return [o for o in self.failures if start <= o.started < end]

    def p99_between(self, start: float, end: float) -> float:
        """The 99th percentile latency, in seconds, of the requests due in [start, end)."""
        latencies = sorted(o.latency for o in self.outcomes if start <= o.started < end)
        if not latencies:
            raise ValueError("no request was due in that window")
        return latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]


class MixedLoad:
    """``rate`` requests a second to 127.0.0.1:``port`` from a thread of its own."""

    def __init__(
        self,
        port: int,
        *,
        host: str = "127.0.0.1",
        rate: float = 300.0,
        new_connection_every: int = 5,
        idle_max: float = 2.0,
        timeout: float = 10.0,
        get_path: str = "/",
        post_path: str = "/echo",
        payload: Payload = small_payload,
        check: Check = echoed,
    ) -> None:
        """``payload`` makes each POST's body and ``check`` judges every 2xx answer,
        GET or POST (the default: 200 bytes, echoed in the answer)."""
        self.host = host
        self.port = port
        self.rate = rate
        self.new_connection_every = new_connection_every
        self.idle_max = idle_max
        self.timeout = timeout
        self.get_path = get_path
        self.post_path = post_path
        self.payload = payload
        self.check = check
        self.report = Report()
        self._pool: list[_Conn] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = threading.Event()
        self._gc_was_enabled = True

    def __enter__(self) -> MixedLoad:
        # The cyclic GC would pause this process for longer and longer as outcomes
        # pile up (tens of ms after a minute): latency of the generator, not of the
        # server. Off while the load runs; nothing here makes cycles that matter.
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> Report:
        """Starts no new request; waits for those in flight (up to the timeout)."""
        self._stop.set()
        self._thread.join(self.timeout + 5)
        if self._gc_was_enabled:
            gc.enable()
        return self.report

    def wait_for(self, count: int, timeout: float = 20) -> None:
        """Until ``count`` requests have succeeded in all."""
        deadline = time.monotonic() + timeout
        while self.report.ok < count:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.report.ok} of {count} requests succeeded: {self.report.failures[:3]}"
                )
            time.sleep(0.01)

    def wait_ended(self, count: int, timeout: float = 20) -> None:
        """Until ``count`` requests have ended in all, answered or failed."""
        deadline = time.monotonic() + timeout
        while len(self.report.outcomes) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.report.outcomes)} of {count} requests ended")
            time.sleep(0.01)

    # -- the load, on its own loop ---------------------------------------------------

    def _run(self) -> None:
        # uvloop: the generator must not be what limits a few thousand requests a second.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(self._schedule())

    async def _schedule(self) -> None:
        tasks: set[asyncio.Task[None]] = set()
        start = time.monotonic()
        reaper = asyncio.get_running_loop().create_task(self._reap_idle())
        self._started.set()
        i = 0
        while not self._stop.is_set():
            due = start + i / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.get_running_loop().create_task(self._one(i, due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        if tasks:
            await asyncio.wait(tasks)
        reaper.cancel()
        for conn in self._pool:
            conn.close()

    async def _reap_idle(self) -> None:
        """Closes pooled connections idle for ``idle_max`` (as client pools do)."""
        while True:
            await asyncio.sleep(self.idle_max / 4)
            now = time.monotonic()
            keep = []
            for conn in self._pool:
                if now - conn.idle_since < self.idle_max:
                    keep.append(conn)
                else:
                    conn.close()
            self._pool[:] = keep

    async def _one(self, i: int, due: float) -> None:
        method = "POST" if i % 2 else "GET"
        error: str | None = None
        pid: int | None = None
        conn: _Conn | None = None
        try:
            async with asyncio.timeout(self.timeout):
                conn = await self._connection(fresh=i % self.new_connection_every == 0)
                keep, pid = await self._exchange(conn, method, i)
            if keep:
                conn.idle_since = time.monotonic()
                self._pool.append(conn)
            else:
                conn.close()
        except TimeoutError:
            error = "timeout"
        except Exception as exc:  # noqa: BLE001 - every failure counts, whatever it is
            error = f"{type(exc).__name__}: {exc}"
        if error is not None and conn is not None:
            conn.close()
        self.report.add(Outcome(due, method, error, pid, time.monotonic() - due, i))

    async def _connection(self, *, fresh: bool) -> _Conn:
        now = time.monotonic()
        while self._pool and not fresh:
            conn = self._pool.pop()
            if now - conn.idle_since < self.idle_max and not conn.writer.is_closing():
                return conn
            conn.close()
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return _Conn(reader, writer)

    async def _exchange(self, conn: _Conn, method: str, i: int) -> tuple[bool, int | None]:
        """One request and its answer; returns whether the connection stays open and
        the pid the answer names."""
        if method == "GET":
            conn.writer.write(f"GET {self.get_path}?i={i} HTTP/1.1\r\nHost: load\r\n\r\n".encode())
            payload = b""
        else:
            payload = self.payload(i)
            head = f"POST {self.post_path}?i={i} HTTP/1.1\r\nHost: load\r\nContent-Length: {len(payload)}\r\n\r\n"
            conn.writer.write(head.encode() + payload)
        await conn.writer.drain()
        head = await conn.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise ValueError(f"answer without Content-Length: {lines[0]!r}")
        body = await conn.reader.readexactly(int(headers["content-length"]))
        if not 200 <= status < 300:
            raise ValueError(f"status {status}: {body[:80]!r}")
        self.check(i, payload, headers, body)
        pid = int(body[4:].split(b" ", 1)[0]) if body.startswith(b"pid=") else None
        return headers.get("connection", "").lower() != "close", pid
