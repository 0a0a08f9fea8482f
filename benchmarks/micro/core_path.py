"""Drive the core in memory, one scenario, N reads (no sockets, no load generator).

Run under callgrind to count instructions per request, which is repeatable on a
shared machine where timings are not (the guard, tests/perf/test_instructions.py,
does this for every scenario against the budgets in tests/perf/budgets.json):

    benchmarks/micro/core_instructions.sh             # every scenario
    benchmarks/micro/core_instructions.sh plaintext   # one

Scenarios (request ids on, access log off unless named, every other default too):

- ``plaintext``: a ``def`` handler answering a str, one request per read
- ``json``: a ``def`` handler answering a dict (JSON), one request per read
- ``async``: an ``async def`` handler that does not suspend, one request per read
- ``pipelined``: ``plaintext``, 16 requests per read (the count is per request)
- ``plaintext_log``, ``pipelined_log``: ``plaintext`` and ``pipelined`` with the
  access log on, as ``veter run --access-log PATH`` sets it up (default text format,
  a file in a temporary directory, one write per loop iteration: see ``_log_to``);
  the difference from the unlogged scenario is what a log line costs
- ``post1k``: a POST with a 1 KiB body read by the handler, one request per read
- ``notfound``: a path no route matches (404), one request per read
- ``headers20``: ``plaintext`` with 20 request headers, one request per read
- ``asgi``: a raw ASGI 3 app hosted by veter (``veter run`` of an ASGI callable)
  answering plaintext in two ``send`` calls, one request per read
- ``typed_get``: a typed ``def`` handler with three typed query parameters (one
  with constraints) answering a dict, one request per read
- ``query_get``: ``typed_get``'s answer from an untyped ``def`` handler reading
  the three query parameters by hand (issue 15's reference for the typed GET)
- ``connection``: ``plaintext`` on a new connection each time: the dispatcher makes
  the connection, ``connection_made``, the request (``Connection: close``),
  ``connection_lost``; what a client that does not keep connections alive (or a
  storm of new ones) costs per request (the transports are made beforehand; the
  driver's loop runs one Python iteration per connection, ~300 instructions)
- ``typed_post``: a typed ``def`` handler taking a JSON body of 10 fields (a nested
  object and a list) as a ``msgspec.Struct`` and answering it through its declared
  return type, one request per read
"""

from __future__ import annotations

import asyncio
import collections
import functools
import gc
import itertools
import operator
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import veter
from veter import _core
from veter.logs.files import open_log
from veter.params import Query


class NullTransport(asyncio.Transport):
    """Takes writes and drops them; ``write`` is a C function (a bound
    ``deque.append`` of a deque that keeps nothing), so no Python frame runs per
    write and the count is the core's own."""

    def __init__(self) -> None:
        super().__init__()
        self.write = collections.deque(maxlen=0).append  # type: ignore[method-assign]

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return ("127.0.0.1", 1)
        return ("127.0.0.1", 8000) if name == "sockname" else default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@dataclass(frozen=True)
class Scenario:
    read: bytes  # what one data_received gets
    per_read: int  # requests in it
    may_suspend: bool = False  # the handler may become a task: wait for it after each read
    hosted: bool = False  # served by a hosted ASGI app instead of a veter.App
    logged: bool = False  # the access log is on, written to a file
    fresh: bool = False  # each read on a connection of its own, made and lost around it


class _Address(msgspec.Struct):
    street: str
    city: str
    zip: str


class _Order(msgspec.Struct):
    id: int
    customer: str
    email: str
    quantity: int
    price: float
    currency: str
    express: bool
    note: str | None
    address: _Address
    items: list[str]


def _app() -> veter.App:
    app = veter.App()

    @app.get("/typed")
    def typed_get(limit: Annotated[int, Query(ge=1, le=100)] = 10, offset: int = 0, q: str = "") -> dict[str, object]:
        return {"limit": limit, "offset": offset, "q": q}

    @app.get("/query")
    def query_get(request: veter.Request) -> dict[str, object]:
        query = request.query
        return {"limit": int(query.get("limit", 10)), "offset": int(query.get("offset", 0)), "q": query.get("q", "")}

    @app.post("/typed")
    def typed_post(order: _Order) -> _Order:
        return order

    @app.get("/")
    def plaintext(request: veter.Request) -> str:
        return "Hello, World!"

    @app.get("/json")
    def json(request: veter.Request) -> dict[str, str]:
        return {"message": "Hello, World!"}

    @app.get("/async")
    async def not_suspending(request: veter.Request) -> str:
        return "Hello, World!"

    @app.post("/upload")
    async def upload(request: veter.Request) -> str:
        body = await request.body()
        return str(len(body))

    return app


_TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


async def _asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": _TEXT_HEADERS})
    await send({"type": "http.response.body", "body": b"Hello, World!"})


def _get(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n{extra}\r\n".encode()


_HEADERS20 = "".join(f"X-Header-{i:02}: value number {i} of twenty\r\n" for i in range(19))
_BODY = b"x" * 1024
_ORDER = (
    b'{"id":1042,"customer":"Ada Lovelace","email":"ada@example.com","quantity":3,"price":19.95,'
    b'"currency":"EUR","express":true,"note":null,"address":{"street":"12 Analytical Row",'
    b'"city":"London","zip":"N1 7AA"},"items":["sku-1","sku-22","sku-333"]}'
)

SCENARIOS: dict[str, Scenario] = {
    "plaintext": Scenario(_get("/"), 1),
    "json": Scenario(_get("/json"), 1),
    "async": Scenario(_get("/async"), 1, may_suspend=True),
    "pipelined": Scenario(_get("/") * 16, 16),
    "plaintext_log": Scenario(_get("/"), 1, logged=True),
    "pipelined_log": Scenario(_get("/") * 16, 16, logged=True),
    "post1k": Scenario(
        b"POST /upload HTTP/1.1\r\nHost: 127.0.0.1:40000\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Length: 1024\r\n\r\n" + _BODY,
        1,
        may_suspend=True,
    ),
    "notfound": Scenario(_get("/missing"), 1),
    "headers20": Scenario(_get("/", _HEADERS20), 1),
    "asgi": Scenario(_get("/"), 1, may_suspend=True, hosted=True),
    "connection": Scenario(_get("/", "Connection: close\r\n"), 1, fresh=True),
    "typed_get": Scenario(_get("/typed?limit=20&offset=40&q=shoes"), 1),
    "query_get": Scenario(_get("/query?limit=20&offset=40&q=shoes"), 1),
    "typed_post": Scenario(
        b"POST /typed HTTP/1.1\r\nHost: 127.0.0.1:40000\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(_ORDER), _ORDER),
        1,
        may_suspend=True,
    ),
}


def _log_to(path: str, app: veter.App) -> tuple[_core.LogFile, collections.deque[Callable[[], None]]]:
    """The access log as ``Server.start`` opens it for ``--access-log PATH``, except
    for its scheduler: the server's is ``functools.partial(loop.call_soon, flush)``,
    and the loop calls ``flush`` at the end of the iteration. Here the loop does not
    turn between reads (they are made from C), so the scheduler notes its call in
    the deque returned, and the driver calls ``flush`` after each read: one write
    per read, as a server answering one read per loop iteration makes."""
    log = open_log(path, buffer_bytes=app.config.log_buffer_bytes)
    queued: collections.deque[Callable[[], None]] = collections.deque()
    log.set_scheduler(functools.partial(queued.append, log.flush))
    return log, queued


def _lines_in(path: str) -> int:
    """Lines in the file at ``path``, counted by ``wc`` in a process of its own:
    read here, the count would cost the driver ~5 instructions a byte, more in the
    run with more reads, and land in the difference."""
    out = subprocess.run(["wc", "-l", path], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


async def drive(scenario: Scenario, reads: int, log_dir: str) -> None:
    if scenario.hosted:
        from veter.hosted import AsgiApp

        app: veter.App = AsgiApp(_asgi_app)
    else:
        app = _app()
    log_path = os.path.join(log_dir, "access.log")
    log, queued = _log_to(log_path, app) if scenario.logged else (None, None)
    config = app.config.with_(access_log=log_path) if log else app.config
    dispatcher = app.build_dispatcher(config, access_log=log)
    if scenario.fresh:
        await _fresh_connections(dispatcher, scenario.read, reads)
        return
    conn = dispatcher()
    conn.connection_made(NullTransport())
    # What start-up made is kept out of the collector's way: a full collection
    # scanning it would land in one of the two runs (LOW, HIGH reads) and not the
    # other depending on the environment's size, and skew the difference by
    # thousands of instructions per request (seen: 34k to 48k for one build).
    gc.collect()
    gc.freeze()
    data_received: Callable[[bytes], None] = conn.data_received
    data = scenario.read
    if not scenario.may_suspend:
        # The reads are made from C, as uvloop makes them: no Python frame of this
        # driver runs per read, so the count is the core's (a Python loop here
        # added ~650 instructions per read on 3.11).
        calls: Any = map(data_received, itertools.repeat(data, reads))
        if log is not None:
            # Each read, then the flush the loop would run at the end of its iteration.
            read = functools.partial(data_received, data)
            calls = map(operator.call, itertools.chain.from_iterable(itertools.repeat((read, log.flush), reads)))
        collections.deque(calls, maxlen=0)
        if conn.in_flight:
            raise RuntimeError("a handler of a scenario without may_suspend became a task")
    else:
        for _ in range(reads):
            data_received(data)
            while conn.in_flight:  # a handler that became a task (Python < 3.12): let it end
                await asyncio.sleep(0)
    if log is not None and queued is not None:
        log.close()  # writes what is buffered
        expected = reads * scenario.per_read
        written = _lines_in(log_path)
        if written != expected or log.dropped or len(queued) != reads:
            raise RuntimeError(
                f"{written} access log lines written ({log.dropped} dropped), expected {expected}; "
                f"{len(queued)} flushes scheduled for {reads} reads"
            )


async def _fresh_connections(dispatcher: Any, data: bytes, reads: int) -> None:
    transports = [NullTransport() for _ in range(reads)]
    gc.collect()
    gc.freeze()
    for transport in transports:
        conn = dispatcher()
        conn.connection_made(transport)
        conn.data_received(data)
        if conn.in_flight:
            raise RuntimeError("the connection scenario's handler became a task")
        conn.connection_lost(None)


def main() -> None:
    import uvloop

    scenario = SCENARIOS[os.environ.get("SCENARIO", "plaintext")]
    with tempfile.TemporaryDirectory() as log_dir:
        uvloop.run(drive(scenario, int(os.environ.get("N", "100000")), log_dir))


if __name__ == "__main__":
    main()
