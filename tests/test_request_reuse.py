"""A connection writes its next request into the last request object when nothing
else holds it (src/ffi/request_reuse.rs): unobservable, and leak-free."""

from __future__ import annotations

import re
import sys
from typing import Any

import veter
from tests.polling import eventually
from veter.testing import MemoryTransport


def _get(target: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode()


def _connection(app: veter.App) -> Any:
    conn = app.build_dispatcher()()
    conn.connection_made(MemoryTransport(conn, ("127.0.0.1", 1)))
    return conn


async def test_a_kept_request_stays_its_own() -> None:
    app = veter.App()
    seen: list[int] = []
    kept: list[veter.Request] = []

    @app.get("/")
    def plain(request: veter.Request) -> str:
        seen.append(id(request))
        return "ok"

    @app.get("/keep")
    def keep(request: veter.Request) -> str:
        seen.append(id(request))
        kept.append(request)
        return "kept"

    conn = _connection(app)
    for target in ("/", "/", "/keep?n=1", "/", "/?after=1"):
        conn.data_received(_get(target))
    # The first object took the next two requests (nothing else held it) ...
    assert seen[0] == seen[1] == seen[2]
    # ... and the handler that kept it keeps its request, not the next ones.
    assert seen[3] != seen[2]
    assert kept[0].target == "/keep?n=1"
    assert kept[0].query_string == "n=1"
    conn.connection_lost(None)


async def test_reuse_leaks_nothing() -> None:
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    data = _get("/")
    before = sys.getrefcount(data)
    conn = _connection(app)
    for _ in range(50):
        conn.data_received(data)
    # The kept object holds the last read, no more (a refill that did not drop
    # the request it replaced would hold all 50).
    assert sys.getrefcount(data) <= before + 1
    conn.connection_lost(None)
    del conn
    assert sys.getrefcount(data) == before


async def test_a_large_read_is_not_kept() -> None:
    app = veter.App()
    seen: list[int] = []

    @app.get("/")
    def plain(request: veter.Request) -> str:
        seen.append(id(request))
        return "ok"

    # One read over the 4 KiB a kept request may hold (src/request.rs,
    # SPARE_READ_BYTES): an idle connection must not keep it alive.
    big = f"GET / HTTP/1.1\r\nHost: t\r\nX-Pad: {'a' * 5000}\r\n\r\n".encode()
    before = sys.getrefcount(big)
    conn = _connection(app)
    conn.data_received(big)
    assert sys.getrefcount(big) == before
    small = _get("/")
    small_before = sys.getrefcount(small)
    conn.data_received(small)
    # A small read's request is kept as before (it holds the read).
    assert sys.getrefcount(small) == small_before + 1
    assert len(seen) == 2
    conn.connection_lost(None)


async def test_a_renewed_request_shows_only_its_own() -> None:
    # The object is renewed in place (Request::renew): its caches (query, body),
    # path params and route must be the new request's, and what the last one
    # held must be let go of, once each.
    app = veter.App()
    seen: list[tuple[int, object, object, object]] = []

    @app.get("/q")
    def query(request: veter.Request) -> str:
        seen.append((id(request), dict(request.query), request.path_params, request.route))
        return "ok"

    @app.get("/items/{name}")
    def item(request: veter.Request, name: str) -> str:
        seen.append((id(request), dict(request.query), request.path_params, request.route))
        return name

    conn = _connection(app)
    reads = [_get(t) for t in ("/q?a=1", "/q?b=2", "/items/x?c=3", "/items/y", "/q")]
    before = [sys.getrefcount(r) for r in reads]
    for read in reads:
        conn.data_received(read)
    del read
    after = [sys.getrefcount(r) for r in reads]
    assert len({entry[0] for entry in seen}) == 1  # one object took every request
    assert [entry[1:] for entry in seen] == [
        ({"a": "1"}, {}, "/q"),
        ({"b": "2"}, {}, "/q"),
        ({"c": "3"}, {"name": "x"}, "/items/{name}"),
        ({}, {"name": "y"}, "/items/{name}"),
        ({}, {}, "/q"),
    ]
    # Only the last read is still held (by the kept object).
    assert [a - b for a, b in zip(after, before, strict=True)] == [0, 0, 0, 0, 1]
    conn.connection_lost(None)


async def test_a_renewed_request_has_only_its_own_headers() -> None:
    # The next request's header spans replace the kept object's (Request::renew):
    # none of the last request's may stay, whether it had more headers or fewer,
    # or spilled past the four kept inline.
    app = veter.App()
    seen: list[tuple[int, list[tuple[str, str]], str]] = []

    @app.get("/h")
    def headers(request: veter.Request) -> str:
        seen.append((id(request), list(request.headers.items()), request.method))
        return "ok"

    def read(extra: str) -> bytes:
        return f"GET /h HTTP/1.1\r\nHost: t\r\n{extra}\r\n".encode()

    many = "".join(f"X-{i}: {i}\r\n" for i in range(6))
    conn = _connection(app)
    for extra in ("", "A: 1\r\nB: 2\r\n", many, "C: 3\r\n", ""):
        conn.data_received(read(extra))
    assert len({entry[0] for entry in seen}) == 1
    assert [entry[1] for entry in seen] == [
        [("host", "t")],
        [("host", "t"), ("a", "1"), ("b", "2")],
        [("host", "t"), *((f"x-{i}", str(i)) for i in range(6))],
        [("host", "t"), ("c", "3")],
        [("host", "t")],
    ]
    conn.connection_lost(None)


def _statuses(transport: MemoryTransport) -> list[bytes]:
    return re.findall(rb"HTTP/1\.1 (\d{3}) ", bytes(transport.data))


async def test_an_answer_of_the_core_between_requests_leaks_nothing() -> None:
    # A 404 or 405 answered by the core between two requests a kept object
    # took: every read is let go of but the last one's, and the answers are
    # in order.
    app = veter.App()
    app.add_route("/", lambda request: "ok")
    reads = [_get("/"), _get("/missing"), b"POST / HTTP/1.1\r\nHost: t\r\n\r\n", _get("/")]
    before = [sys.getrefcount(r) for r in reads]

    async def serve() -> tuple[list[bytes], list[int]]:
        conn = app.build_dispatcher()()
        transport = MemoryTransport(conn, ("127.0.0.1", 1))
        conn.connection_made(transport)
        for data in reads:
            conn.data_received(data)
        del data
        await eventually(lambda: len(_statuses(transport)) == 4, what="four answers")
        held = [sys.getrefcount(r) for r in reads]
        conn.connection_lost(None)
        return _statuses(transport), held

    statuses, held = await serve()
    assert statuses == [b"200", b"404", b"405", b"200"]
    assert [a - b for a, b in zip(held, before, strict=True)] == [0, 0, 0, 1]
    assert [sys.getrefcount(r) for r in reads] == before
