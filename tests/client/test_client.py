"""The client against a real upstream on loopback (aiohttp's server): keep-alive reuse,
per-host limits, request ids, JSON helpers, retries, body limits, and the 502/504 an
app answers when an upstream call fails."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web

import veter
from tests.client.servers import silent_server
from tests.polling import eventually
from tests.services import free_port
from veter.client import (
    ClientConnectionError,
    ClientError,
    ClientTimeout,
    HttpClient,
    HttpStatusError,
    ResponseTooLarge,
    Retries,
    Timeouts,
)
from veter.context import request_var
from veter.testing import AsyncTestClient

pytestmark = pytest.mark.timeout(60)


@dataclass
class Upstream:
    url: str
    peers: list[tuple[str, int]] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    most_in_flight: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    state = Upstream("")

    def seen(request: web.Request) -> None:
        state.peers.append(request.transport.get_extra_info("peername") if request.transport else ("?", 0))
        state.hits[request.path] = state.hits.get(request.path, 0) + 1

    async def echo(request: web.Request) -> web.Response:
        seen(request)
        body = await request.read()
        return web.json_response(
            {
                "method": request.method,
                "query": dict(request.query),
                "request_id": request.headers.get("X-Request-ID"),
                "body": body.decode(),
            }
        )

    async def flaky(request: web.Request) -> web.Response:
        seen(request)
        if state.hits[request.path] <= 2:
            return web.Response(status=503, text="try later")
        return web.json_response({"ok": True})

    async def always_503(request: web.Request) -> web.Response:
        seen(request)
        return web.Response(status=503)

    async def missing(request: web.Request) -> web.Response:
        seen(request)
        return web.Response(status=404, text="no such thing")

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"x" * 100)

    async def held(request: web.Request) -> web.Response:
        seen(request)
        state.in_flight += 1
        state.most_in_flight = max(state.most_in_flight, state.in_flight)
        await state.release.wait()
        state.in_flight -= 1
        return web.Response(text="done")

    app = web.Application()
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/flaky", flaky)
    app.router.add_route("*", "/always503", always_503)
    app.router.add_get("/missing", missing)
    app.router.add_get("/big", big)
    app.router.add_get("/held", held)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    state.url = f"http://127.0.0.1:{port}"
    yield state
    state.release.set()
    await runner.cleanup()


async def test_keep_alive_reuses_one_connection(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url) as client:
        for i in range(20):
            answer = await client.get("/echo", params={"i": i})
            assert answer.status == 200 and answer.json()["query"] == {"i": str(i)}
    assert len(upstream.peers) == 20
    assert len(set(upstream.peers)) == 1


async def test_per_host_connection_limit(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url, limit_per_host=2) as client:
        calls = [asyncio.ensure_future(client.get("/held")) for _ in range(6)]
        await eventually(lambda: upstream.in_flight == 2, what="two requests in flight")
        upstream.release.set()
        answers = await asyncio.gather(*calls)
    assert [a.text() for a in answers] == ["done"] * 6
    assert upstream.most_in_flight == 2
    assert len(set(upstream.peers)) == 2


async def test_request_id_is_sent_on(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url) as client:
        assert (await client.get_json("/echo"))["request_id"] is None
        # Stands in for the request a handler runs for (only its id is read).
        token = request_var.set(SimpleNamespace(id="req-42"))  # type: ignore[arg-type]
        try:
            assert (await client.get_json("/echo"))["request_id"] == "req-42"
            explicit = await client.get_json("/echo", headers={"x-request-id": "mine"})
            assert explicit["request_id"] == "mine"
        finally:
            request_var.reset(token)


async def test_json_helpers_and_status_errors(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url) as client:
        echoed = await client.post_json("/echo", {"a": [1, 2]})
        assert echoed["method"] == "POST" and echoed["body"] == '{"a":[1,2]}'
        with pytest.raises(HttpStatusError) as caught:
            await client.get_json("/missing")
        assert caught.value.status == 404 and caught.value.response.text() == "no such thing"
        assert caught.value.method == "GET" and caught.value.url == f"{upstream.url}/missing"
        answer = await client.get(f"{upstream.url}/missing")  # absolute URLs work too
        assert answer.status == 404 and not answer.ok


async def test_retries_are_opt_in_and_only_for_idempotent_methods(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url) as plain:
        assert (await plain.get("/always503")).status == 503
    assert upstream.hits["/always503"] == 1

    policy = Retries(attempts=3, backoff=0.01)
    async with HttpClient(base_url=upstream.url, retries=policy) as client:
        assert (await client.get_json("/flaky")) == {"ok": True}
        assert upstream.hits["/flaky"] == 3
        assert (await client.post("/always503")).status == 503  # POST: never retried
        assert upstream.hits["/always503"] == 2
        assert (await client.get("/always503", retries=False)).status == 503
        assert upstream.hits["/always503"] == 3
        assert (await client.delete("/always503")).status == 503  # idempotent: 3 tries
        assert upstream.hits["/always503"] == 6


async def test_total_timeout_bounds_the_retries(upstream: Upstream) -> None:
    policy = Retries(attempts=50, backoff=0.1, max_backoff=0.1)
    async with HttpClient(base_url=upstream.url, retries=policy, timeouts=Timeouts(total=0.5)) as client:
        started = time.perf_counter()
        with pytest.raises(ClientTimeout) as caught:
            await client.get("/always503")
        elapsed = time.perf_counter() - started
    assert caught.value.which == "total"
    assert 0.495 <= elapsed <= 0.5 * 1.1 + 0.05
    assert 2 <= upstream.hits["/always503"] < 50


async def test_connection_refused_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/x"
    async with HttpClient(retries=Retries(attempts=2, backoff=0.01)) as client:
        with pytest.raises(ClientConnectionError, match="cannot connect") as caught:
            await client.put(url, content=b"x")
    assert caught.value.method == "PUT" and caught.value.url == url


async def test_body_limit(upstream: Upstream) -> None:
    async with HttpClient(base_url=upstream.url, max_body_bytes=10) as client:
        with pytest.raises(ResponseTooLarge, match="over 10"):
            await client.get("/big")


async def test_not_open_and_relative_urls_are_clear_errors(upstream: Upstream) -> None:
    with pytest.raises(ClientError, match="not open"):
        await HttpClient().get(f"{upstream.url}/echo")
    async with HttpClient() as client:
        with pytest.raises(ValueError, match="base_url"):
            await client.get("/echo")


async def test_app_answers_504_and_502_for_failed_upstream_calls(upstream: Upstream) -> None:
    app = veter.App()
    http = HttpClient(app, timeouts=Timeouts(read=0.2, total=2))
    assert app.state.http is http

    async with silent_server() as silent_port:

        @app.get("/slow")
        async def slow(request: veter.Request) -> Any:
            return await http.get_json(f"http://127.0.0.1:{silent_port}/")

        @app.get("/gone")
        async def gone(request: veter.Request) -> Any:
            return await http.get_json(f"{upstream.url}/missing")

        @app.get("/fine")
        async def fine(request: veter.Request) -> Any:
            return await http.get_json(f"{upstream.url}/echo")

        async with AsyncTestClient(app) as client:
            assert (await client.get("/slow")).status == 504
            assert (await client.get("/gone")).status == 502
            # The id the request came with is passed on to the upstream service.
            answer = await client.get("/fine", headers={"X-Request-ID": "from-caller"})
            assert answer.status == 200 and answer.json()["request_id"] == "from-caller"
            assert answer.headers["x-request-id"] == "from-caller"
    assert repr(http) == "<HttpClient 'http' closed>"


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Retries(attempts=0)
    with pytest.raises(ValueError, match="at least 1 connection"):
        HttpClient(limit_per_host=0)
    with pytest.raises(ValueError, match="identifier"):
        HttpClient(name="a-b")
