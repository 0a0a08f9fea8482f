"""Each client timeout fires within 10 % + 50 ms of its setting, and says which it was:
against a server whose accept queue is full (connect), one that never answers (read),
one that answers a byte a second (total), and a DNS server that never answers (dns)."""

from __future__ import annotations

import time

import pytest

from tests.client.servers import SilentDNS, full_backlog, silent_server, trickling_server
from veter.client import ClientTimeout, HttpClient, Timeouts

pytestmark = pytest.mark.timeout(60)


def assert_on_time(elapsed: float, setting: float) -> None:
    assert setting - 0.005 <= elapsed <= setting * 1.1 + 0.05, (
        f"fired after {elapsed:.3f} s, setting {setting} s"
    )


async def timed(client: HttpClient, url: str) -> tuple[ClientTimeout, float]:
    started = time.perf_counter()
    with pytest.raises(ClientTimeout) as caught:
        await client.get(url)
    return caught.value, time.perf_counter() - started


@pytest.mark.parametrize("seconds", [0.3, 1.0])
async def test_connect_timeout_against_a_full_backlog(seconds: float) -> None:
    with full_backlog() as port:
        async with HttpClient(timeouts=Timeouts(connect=seconds, read=10, total=10)) as client:
            error, elapsed = await timed(client, f"http://127.0.0.1:{port}/")
    assert error.which == "connect" and error.seconds == seconds
    assert error.method == "GET" and error.url == f"http://127.0.0.1:{port}/"
    assert f"connect timeout ({seconds:g} s)" in str(error)
    assert_on_time(elapsed, seconds)


@pytest.mark.parametrize("seconds", [0.3, 1.0])
async def test_read_timeout_against_a_server_that_never_answers(seconds: float) -> None:
    async with (
        silent_server() as port,
        HttpClient(timeouts=Timeouts(connect=5, read=seconds, total=10)) as client,
    ):
        error, elapsed = await timed(client, f"http://127.0.0.1:{port}/slow")
    assert error.which == "read" and error.url == f"http://127.0.0.1:{port}/slow"
    assert_on_time(elapsed, seconds)


async def test_total_timeout_against_a_server_that_trickles_a_byte_a_second() -> None:
    """The read timeout (1.5 s) never fires, since a byte comes every second: only
    the total deadline ends the request."""
    async with (
        trickling_server(1.0) as port,
        HttpClient(timeouts=Timeouts(connect=5, read=1.5, total=2.5)) as client,
    ):
        error, elapsed = await timed(client, f"http://127.0.0.1:{port}/")
    assert error.which == "total"
    assert_on_time(elapsed, 2.5)


@pytest.mark.parametrize("seconds", [0.3, 1.0])
async def test_dns_timeout_against_a_resolver_that_never_answers(seconds: float) -> None:
    dns = SilentDNS()
    try:
        client = HttpClient(
            timeouts=Timeouts(dns=seconds, connect=5, read=5, total=10),
            nameservers=[f"127.0.0.1:{dns.port}"],
        )
        async with client:
            error, elapsed = await timed(client, "http://service.veter-test.invalid:8080/x")
        assert dns.queries() >= 1, "the lookup went to our DNS server"
    finally:
        dns.close()
    assert error.which == "dns" and error.url == "http://service.veter-test.invalid:8080/x"
    assert_on_time(elapsed, seconds)


async def test_a_per_call_timeout_replaces_the_clients() -> None:
    async with silent_server() as port, HttpClient(timeouts=Timeouts(read=10, total=20)) as client:
        started = time.perf_counter()
        with pytest.raises(ClientTimeout) as caught:
            await client.get(f"http://127.0.0.1:{port}/", timeouts=Timeouts(read=0.2, total=5))
        assert caught.value.which == "read"
        assert_on_time(time.perf_counter() - started, 0.2)


def test_timeouts_are_never_infinite_or_zero() -> None:
    for bad in ({"total": float("inf")}, {"read": 0}, {"connect": -1}, {"dns": float("nan")}):
        with pytest.raises(ValueError, match="positive, finite"):
            Timeouts(**bad)
