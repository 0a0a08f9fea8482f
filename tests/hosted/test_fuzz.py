"""The hosted-app differential fuzzer (tests/hosted/fuzz/) in the test command:
fixed seeds for a bounded time (VETER_FUZZ_SECONDS in all, 60 by default), or one
seed (VETER_FUZZ_SEED), or one case of it (VETER_FUZZ_CASE). A failure prints
the seed, the case, its bytes and the difference; the long run is
``python -m tests.hosted.fuzz --minutes 30``. The second test is the HTTP/2 run
(veter's h2c against Hypercorn, the same time again; ``--http2`` for its long run)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.hosted.fuzz.__main__ import SEEDS
from tests.hosted.fuzz.h2run import run_h2
from tests.hosted.fuzz.run import run
from tests.hosted.fuzz.servers import H2_PEER, PEERS, VETER, Server, start

pytest.importorskip("uvicorn")
pytest.importorskip("gunicorn")

SECONDS = float(os.environ.get("VETER_FUZZ_SECONDS", "60"))
ONE_SEED = os.environ.get("VETER_FUZZ_SEED")
ONE_CASE = os.environ.get("VETER_FUZZ_CASE")
RUN_SEEDS = [int(ONE_SEED)] if ONE_SEED else list(SEEDS)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(SECONDS / len(RUN_SEEDS) + 120)]


def serving(plans: list[Any]) -> Iterator[dict[str, Server]]:
    """The servers of ``plans``, started, then closed."""
    started = start(plans)
    try:
        yield started
    finally:
        for server in started.values():
            server.close()


def run_seed(runner: Callable[..., Any], servers: dict[str, Server], seed: int) -> None:
    """One seed's share of the time through ``runner``; every case must agree."""
    case = int(ONE_CASE) if ONE_CASE else None
    report = runner(servers, [seed], SECONDS / len(RUN_SEEDS), only_case=case)
    print(report.summary())
    assert sum(report.cases.values()) > 0
    assert not report.failures, "\n\n".join(report.failures) + "\n\n" + report.summary()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Server]]:
    yield from serving([*VETER.values(), *PEERS])


@pytest.mark.parametrize("seed", RUN_SEEDS)
def test_hosted_apps_agree_with_uvicorn_and_gunicorn(servers: dict[str, Server], seed: int) -> None:
    run_seed(run, servers, seed)


@pytest.fixture(scope="module")
def h2_servers() -> Iterator[dict[str, Server]]:
    yield from serving([VETER["asgi"], H2_PEER])


@pytest.mark.parametrize("seed", RUN_SEEDS)
def test_hosted_asgi_over_http2_agrees_with_hypercorn(h2_servers: dict[str, Server], seed: int) -> None:
    """The same h2c frames to veter and to Hypercorn (h2cases.py, h2wire.py)."""
    run_seed(run_h2, h2_servers, seed)
