"""Behaviour every pool shares, against real PostgreSQL, Redis and MariaDB servers:
queries, readiness, exhaustion (503 after acquire_timeout), a database down at
startup, and a server restart in the middle of a load."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import veter
from tests.polling import eventually
from tests.pools.kinds import KINDS, Kind, app_with
from tests.services import free_port
from veter import metrics
from veter.testing import AsyncTestClient

pytestmark = pytest.mark.timeout(90)


def within(elapsed: float, setting: float) -> bool:
    """The project's timing bar: the setting, plus at most 10 % + 50 ms."""
    return setting <= elapsed + 0.005 and elapsed <= setting * 1.1 + 0.05


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def kind(request: pytest.FixtureRequest) -> Kind:
    k: Kind = request.param
    return k


@pytest.fixture
def server(kind: Kind, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(kind.fixture)


async def test_query_readiness_and_figures(kind: Kind, server: Any) -> None:
    app, pool = app_with(kind, kind.url(server), min_size=1, max_size=3)
    assert app.state.__dict__[pool.name] is pool
    async with AsyncTestClient(app) as client:
        ready = await client.get("/readyz")
        assert ready.status == 200, ready.text
        assert ready.json() == {"ready": True, "app": "started", "checks": {pool.name: "ok"}}
        for _ in range(3):
            answer = await client.get("/q")
            assert answer.status == 200 and answer.json() == {"value": 1}
        stats = pool.stats()
        assert stats["state"] == "up" and stats["ready"] is True
        assert stats["kind"] == kind.name and stats["name"] == pool.name
        assert stats["size"] == 3
        assert stats["acquires"] >= 3
        assert stats["in_use"] == 0 and stats["waiting"] == 0
        assert 1 <= stats["open"] <= 3
        assert stats["acquire_seconds_total"] > 0 and stats["acquire_seconds_max"] > 0
        assert stats["timeouts"] == 0 and stats["unavailable"] == 0
        # The same figures on the metrics page, read back with Prometheus's parser.
        page = metrics.render(metrics.collect(SimpleNamespace(app=app, dispatcher=None, lag_monitor=None)))  # type: ignore[arg-type]
        samples = {
            (s.name, s.labels.get("pool")): s.value
            for family in text_string_to_metric_families(page)
            for s in family.samples
        }
        assert samples[("veter_pool_size", pool.name)] == 3
        assert samples[("veter_pool_acquires_total", pool.name)] >= 3
        assert samples[("veter_pool_ready", pool.name)] == 1
    assert pool.state == "closed"
    assert pool.stats()["open"] == 0


async def test_exhausted_pool_answers_503_after_acquire_timeout(kind: Kind, server: Any) -> None:
    app, pool = app_with(kind, kind.url(server), min_size=0, max_size=2, acquire_timeout=0.3, retry_after=2)
    async with AsyncTestClient(app) as client, pool.acquire(), pool.acquire():
        assert pool.stats()["in_use"] == 2
        started = time.perf_counter()
        waiting = asyncio.ensure_future(client.get("/q"))
        await eventually(lambda: pool.stats()["waiting"] == 1, what="a waiting request")
        answer = await waiting
        elapsed = time.perf_counter() - started
        assert answer.status == 503
        assert answer.headers["retry-after"] == "2"
        assert within(elapsed, 0.3), elapsed
        stats = pool.stats()
        assert stats["timeouts"] == 1 and stats["waiting"] == 0
    async with AsyncTestClient(app) as client:
        assert (await client.get("/q")).status == 200


async def test_a_waiting_request_gets_the_connection_freed_for_it(kind: Kind, server: Any) -> None:
    app, pool = app_with(kind, kind.url(server), min_size=0, max_size=1, acquire_timeout=5)
    async with AsyncTestClient(app) as client:
        async with pool.acquire():
            waiting = asyncio.ensure_future(client.get("/q"))
            await eventually(lambda: pool.stats()["waiting"] == 1, what="a waiting request")
        answer = await waiting
        assert answer.status == 200
        assert pool.stats()["acquire_seconds_max"] > 0


async def test_connections_are_lent_in_arrival_order(kind: Kind, server: Any) -> None:
    """First come, first served: a request that arrives as a connection is given back
    does not take it from one that has been waiting (a barging queue serves some
    requests at once and leaves others waiting many turns: a closed loop's p99)."""
    app, pool = app_with(kind, kind.url(server), min_size=0, max_size=1, acquire_timeout=5)
    served: list[str] = []

    async def take(who: str) -> None:
        async with pool.acquire():
            served.append(who)
            await asyncio.sleep(0)

    async with AsyncTestClient(app):
        async with pool.acquire():
            waiting = [asyncio.ensure_future(take(f"waiter {i}")) for i in range(5)]
            await eventually(lambda: pool.stats()["waiting"] == 5, what="five waiting requests")
        # The connection is back and the first waiter woken, but it has not run yet:
        # this task asks again at once, in the same turn of the loop.
        await take("late")
        await asyncio.gather(*waiting)
    assert served == [*(f"waiter {i}" for i in range(5)), "late"]


async def test_down_at_startup_does_not_block_and_recovers(kind: Kind) -> None:
    service = kind.service()  # not started: nothing listens on its port yet
    try:
        app, pool = app_with(kind, kind.url(service), connect_timeout=2, reconnect_max=0.2)
        async with AsyncTestClient(app) as client:
            started = time.perf_counter()
            assert app.started
            ready = await client.get("/readyz")
            assert ready.status == 503
            report = ready.json()
            assert report["ready"] is False and report["app"] == "started"
            assert report["checks"][pool.name].startswith("failing: connecting")
            answer = await client.get("/q")
            assert answer.status == 503 and answer.headers["retry-after"] == "1"
            assert time.perf_counter() - started < 0.5, "requests must fail fast while the database is down"
            assert pool.stats()["unavailable"] >= 1

            await asyncio.to_thread(service.start)
            async with asyncio.timeout(30):
                await pool.wait_ready()
            assert (await client.get("/readyz")).status == 200
            answer = await client.get("/q")
            assert answer.status == 200 and answer.json() == {"value": 1}
    finally:
        service.close()


async def test_startup_with_unreachable_database_is_bounded_by_connect_timeout(kind: Kind) -> None:
    app, pool = app_with(kind, kind.url(_unstarted_url(kind)), connect_timeout=1)
    started = time.perf_counter()
    async with AsyncTestClient(app):
        assert time.perf_counter() - started < 1.5
        assert pool.state == "connecting"
        assert pool.last_error


def _unstarted_url(kind: Kind) -> Any:
    class Nothing:
        port = free_port()
        dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        url = f"redis://127.0.0.1:{port}/0" if kind.name == "redis" else f"mysql://root@127.0.0.1:{port}/test"

    return Nothing()


async def test_restart_in_the_middle_of_a_load(kind: Kind) -> None:
    """Requests during the outage fail fast with 503; the pool reconnects by itself."""
    service = kind.service()
    service.start()
    try:
        app, pool = app_with(kind, kind.url(service), max_size=4, connect_timeout=2, reconnect_max=0.2)
        outcomes: list[tuple[float, int, float]] = []
        stop = asyncio.Event()

        async def load(client: AsyncTestClient) -> None:
            while not stop.is_set():
                began = time.perf_counter()
                answer = await client.get("/q")
                outcomes.append((began, answer.status, time.perf_counter() - began))
                await asyncio.sleep(0)

        def count(status: int, since: float = 0.0) -> int:
            return sum(1 for began, got, _ in outcomes if got == status and began >= since)

        async with AsyncTestClient(app) as client:
            workers = [asyncio.create_task(load(client)) for _ in range(8)]
            try:
                await eventually(lambda: count(200) >= 50, what="first successes")
                await asyncio.to_thread(service.stop)
                outage = time.perf_counter()
                await eventually(lambda: count(503, outage) >= 20, what="failures while down")
                assert (await client.get("/readyz")).status == 503
                await asyncio.to_thread(service.start)
                async with asyncio.timeout(30):
                    await pool.wait_ready()
                back = time.perf_counter()
                await eventually(lambda: count(200, back) >= 50, what="successes after the restart")
            finally:
                stop.set()
                await asyncio.gather(*workers)
            assert (await client.get("/readyz")).status == 200
            stats = pool.stats()
            assert stats["connections_lost"] >= 1
            assert stats["state"] == "up"

        statuses = {status for _, status, _ in outcomes}
        assert statuses <= {200, 503}, statuses
        slowest_503 = max(took for _, status, took in outcomes if status == 503)
        assert slowest_503 < 1.0, f"a 503 took {slowest_503:.3f} s"
        tail = [status for began, status, _ in outcomes if began >= back]
        assert tail.count(503) <= pool.max_size, "after recovery at most one stale connection each"
    finally:
        service.close()


async def test_a_query_error_is_not_an_outage(kind: Kind, server: Any) -> None:
    app = veter.App()
    pool = kind.make(app, kind.url(server))

    @app.get("/bad")
    async def bad(request: veter.Request) -> str:
        if kind.name == "postgres":
            await pool.fetchval("SELEC 1")  # type: ignore[attr-defined]
        elif kind.name == "redis":
            await pool.client.execute_command("NO-SUCH-COMMAND")  # type: ignore[attr-defined]
        else:
            await pool.fetchone("SELEC 1")  # type: ignore[attr-defined]
        return "unreachable"

    async with AsyncTestClient(app) as client:
        answer = await client.get("/bad")
        assert answer.status == 500
        assert pool.state == "up"
        assert pool.stats()["connections_lost"] == 0 and pool.stats()["in_use"] == 0
        assert await kind.query(pool) == 1


def test_settings_are_checked() -> None:
    kind = KINDS[0]
    for bad in (
        {"max_size": 0},
        {"min_size": 5, "max_size": 2},
        {"acquire_timeout": 0},
        {"connect_timeout": float("inf")},
        {"retry_after": -1},
        {"name": "not an identifier"},
    ):
        with pytest.raises(ValueError, match=r"must|identifier"):
            kind.make(None, "postgresql://x@127.0.0.1:1/x", **bad)


def test_one_name_per_app() -> None:
    app = veter.App()
    KINDS[0].make(app, "postgresql://x@127.0.0.1:1/x")
    with pytest.raises(ValueError, match=r"app.state.pg is already set"):
        KINDS[0].make(app, "postgresql://x@127.0.0.1:1/x")


async def test_acquire_before_open_is_a_clear_503() -> None:
    pool = KINDS[0].make(None, "postgresql://x@127.0.0.1:1/x")
    with pytest.raises(veter.pools.PoolUnavailable, match="never opened"):
        async with pool.acquire():
            pass
