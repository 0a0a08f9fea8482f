"""Overload control: a cap on handlers in flight, and shedding of late requests."""

from __future__ import annotations

import asyncio
import select
import threading
import time
from collections.abc import Callable

import pytest

import veter
from veter.listener import Listener

from .conftest import RunningServer, read_responses

Serve = Callable[..., RunningServer]


def test_max_concurrency_holds_requests_until_a_slot_frees(serve: Serve) -> None:
    app = veter.App()
    release = asyncio.Event()
    running: list[int] = []

    @app.get("/hold/{n:int}")
    async def hold(request: veter.Request, n: int) -> str:
        running.append(n)
        await release.wait()
        return f"done {n}"

    server = serve(app, max_concurrency=2)
    socks = [server.connect() for _ in range(5)]
    try:
        for n, sock in enumerate(socks):
            sock.sendall(f"GET /hold/{n} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        dispatcher = server.server.dispatcher if server.server else None
        assert dispatcher is not None
        deadline = time.monotonic() + 5
        while len(running) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        # Give the loop a chance to (wrongly) start more; then check the cap held.
        for _ in range(20):
            assert dispatcher.in_flight <= 2
            assert len(running) == 2, running
            time.sleep(0.005)
        assert server.loop is not None
        server.loop.call_soon_threadsafe(release.set)
        answers = [read_responses(sock, 1)[0][0].text for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert answers == [f"done {n}" for n in range(5)]
    assert sorted(running) == list(range(5))


def test_late_requests_are_shed_with_503(serve: Serve) -> None:
    app = veter.App()

    @app.get("/cpu")
    def cpu(request: veter.Request) -> str:
        end = time.perf_counter() + 0.05  # 50 ms of CPU work on the loop
        while time.perf_counter() < end:
            pass
        return "worked"

    server = serve(app, queue_timeout=0.02)
    # Six requests in one write are read together: the first starts at once, the
    # others would start 50, 100, ... ms later, past the 20 ms queue timeout. (One
    # pipelined connection keeps this deterministic; the test client shares the
    # server's process and GIL, which makes arrival times over several connections
    # depend on thread scheduling.)
    with server.connect() as sock:
        start = time.monotonic()
        sock.sendall(b"GET /cpu HTTP/1.1\r\nHost: t\r\n\r\n" * 6)
        responses, closed = read_responses(sock, 6)
        took = time.monotonic() - start
    assert [r.status for r in responses] == [200, 503, 503, 503, 503, 503]
    assert all(r.headers["retry-after"] == "1" for r in responses[1:])
    assert not closed
    assert took < 0.05 + 0.03, "shed requests cost only their encoding"
    dispatcher = server.server.dispatcher if server.server else None
    assert dispatcher is not None
    assert dispatcher.shed_count == 5


def test_app_middleware_sees_the_shed_503(serve: Serve) -> None:
    app = veter.App()
    seen: list[tuple[str, int]] = []

    @app.middleware
    async def cors(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
        response = await call_next(request)
        seen.append((request.path, response.status))
        response.set_header("Access-Control-Allow-Origin", "*")
        return response

    @app.get("/slow")
    async def slow(request: veter.Request) -> str:
        await asyncio.sleep(0.05)
        return "worked"

    # One handler at a time: the second and third requests wait for the first's
    # 50 ms, past the 20 ms queue timeout.
    server = serve(app, queue_timeout=0.02, max_concurrency=1)
    with server.connect() as sock:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n" * 3)
        responses, closed = read_responses(sock, 3)
    assert [r.status for r in responses] == [200, 503, 503]
    # The middleware ran around the core's answer (the handler did not run for it).
    assert all(r.headers["access-control-allow-origin"] == "*" for r in responses)
    assert all(r.headers["retry-after"] == "1" for r in responses[1:])
    assert responses[1].text == "Service Unavailable: overloaded"
    assert seen == [("/slow", 200), ("/slow", 503), ("/slow", 503)]
    assert not closed


def test_shed_requests_do_not_close_the_connection(serve: Serve) -> None:
    app = veter.App()

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    server = serve(app, queue_timeout=0.5)
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n" * 3)
        responses, closed = read_responses(sock, 3)
    assert [r.status for r in responses] == [200, 200, 200]
    assert not closed


def test_requests_on_new_connections_are_shed_after_waiting_in_the_kernel(serve: Serve) -> None:
    # uvloop accepts one connection per loop iteration, so the first request of each
    # new connection is the first read of its iteration: only the kernel knows how
    # long it waited (in the accept queue), and veter asks it (TCP_INFO).
    app = veter.App()

    @app.get("/slow")
    def slow(request: veter.Request) -> str:
        time.sleep(0.05)  # blocks the loop (and lets the test thread run meanwhile)
        return "worked"

    server = serve(app, queue_timeout=0.02)
    socks = []
    try:
        for _ in range(8):
            sock = server.connect()
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            socks.append(sock)
        statuses = [read_responses(sock, 1)[0][0].status for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert statuses[0] == 200
    # Each later request waited behind at least one 50 ms handler: past 20 ms.
    assert statuses.count(503) >= 5, statuses


def burst_while_held(server: RunningServer) -> tuple[bool, list[tuple[int, float]]]:
    """After one 50 ms request, hold the server's loop for 20 ms (no handler work)
    and send three requests meanwhile, so that one loop iteration reads all three.
    Whether they were sent within 10 ms of the hold starting, and (status, seconds)
    of each answer in the order they came."""
    assert server.loop is not None
    first, *burst = [server.connect() for _ in range(4)]
    holding = threading.Event()

    def hold() -> None:
        holding.set()
        time.sleep(0.02)

    try:
        # uvloop accepts one connection per loop iteration: one that is still in the
        # accept queue when the burst comes would be read an iteration late. A first
        # request on each makes sure the loop has them all (the same route, so the
        # handlers' average cost, which the shedding uses, stays 50 ms).
        for sock in burst:
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            assert read_responses(sock, 1)[0][0].status == 200
        first.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_responses(first, 1)[0][0].status == 200
        server.loop.call_soon_threadsafe(hold)
        assert holding.wait(5), "the loop did not run the hold"
        held = time.monotonic()
        for sock in burst:
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        sent_in_time = time.monotonic() - held < 0.01
        answered: list[tuple[int, float]] = []
        waiting = {sock.fileno(): sock for sock in burst}
        start = time.monotonic()
        while waiting:
            ready, _, _ = select.select(list(waiting.values()), [], [], 5)
            assert ready, "no answer within 5 s"
            for sock in ready:
                del waiting[sock.fileno()]
                answered.append((read_responses(sock, 1)[0][0].status, time.monotonic() - start))
    finally:
        for sock in (first, *burst):
            sock.close()
    return sent_in_time, answered


def test_a_saturated_worker_sheds_at_read_time_not_after_the_work_ahead(serve: Serve) -> None:
    # After a 50 ms handler the worker counts as saturated (its last iteration's
    # handlers ran past half the 30 ms queue timeout): its `def` handlers are then
    # deferred until the iteration's reads are done, and a request with 50 ms of
    # work queued ahead of it is shed when read, not after that work.
    app = veter.App()

    @app.get("/slow")
    def slow(request: veter.Request) -> str:
        # Blocks the loop for 50 ms without holding the GIL: the server runs in a
        # thread of this process, and a busy loop here would keep this test's own
        # thread from seeing the 503s when they arrive (CI saw all three answers
        # "arrive" at 65 ms that way).
        time.sleep(0.05)
        return "worked"

    server = serve(app, queue_timeout=0.03)
    # The scenario needs the three requests to land while the loop is held; when this
    # thread was descheduled too long to send them in time (a busy CI machine), the
    # attempt proves nothing and is made again.
    for _attempt in range(5):
        sent_in_time, answered = burst_while_held(server)
        if sent_in_time:
            break
    else:
        pytest.fail("could not send three requests within 10 ms in five attempts")
    statuses = [status for status, _ in answered]
    assert sorted(statuses) == [200, 503, 503], answered
    # The two 503s went out before the 200's 50 ms of work, not after it.
    assert statuses[-1] == 200, answered
    assert answered[1][1] < answered[2][1] - 0.03, answered


def test_a_worker_at_max_concurrency_stops_accepting_until_a_slot_frees(serve: Serve) -> None:
    app = veter.App()
    release = asyncio.Event()

    @app.get("/hold")
    async def hold(request: veter.Request) -> str:
        await release.wait()
        return "held"

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    server = serve(app, max_concurrency=1)
    assert server.server is not None and server.server.dispatcher is not None and server.loop is not None
    dispatcher, (listener,) = server.server.dispatcher, server.server._servers
    assert isinstance(listener, Listener)
    with server.connect() as held:
        held.sendall(b"GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
        wait_for(lambda: dispatcher.in_flight == 1)
        wait_for(lambda: not listener.accepting)
        # The kernel completes the handshake, but the worker does not accept it:
        # with several workers sharing the socket, another one would.
        with server.connect() as late:
            late.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            for _ in range(20):
                assert dispatcher.connection_count == 1
                time.sleep(0.005)
            server.loop.call_soon_threadsafe(release.set)
            assert read_responses(held, 1)[0][0].text == "held"
            assert read_responses(late, 1)[0][0].text == "ok"
    assert listener.accepting and listener.pauses == 1


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.002)
