"""/metrics over real sockets: one process, and a master whose workers add up."""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

import veter

from .conftest import RunningServer, read_responses
from .processes import Proc, children_of


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
        return str(answer.read().decode())


def sample(text: str, series: str) -> float:
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_single_process(serve: Callable[..., RunningServer]) -> None:
    app = veter.App()

    @app.get("/items/{n:int}")
    def item(request: veter.Request, n: int) -> dict[str, int]:
        return {"n": n}

    running = serve(app, metrics_path="/metrics")
    with running.connect() as sock:
        sock.sendall(b"GET /items/1 HTTP/1.1\r\nHost: a\r\n\r\n" * 3 + b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        read_responses(sock, 4)
    text = scrape(running.port)
    # Prometheus's own parser reads the page: every family typed, every sample parsed.
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["veter_requests"].type == "counter"
    assert families["veter_request_duration_seconds"].type == "histogram"
    ok = [
        s
        for s in families["veter_requests"].samples
        if s.labels == {"route": "/items/{n:int}", "status": "200"}
    ]
    assert [s.value for s in ok] == [3.0]
    assert sample(text, 'veter_requests_total{route="/items/{n:int}",status="200"}') == 3
    assert sample(text, 'veter_requests_total{route="(unmatched)",status="404"}') == 1
    assert sample(text, 'veter_request_duration_seconds_bucket{route="/items/{n:int}",le="+Inf"}') == 3
    assert f'veter_requests_in_flight{{worker="{os.getpid()}"}}' in text


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


def eventually(check: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.timeout(120)
def test_workers_add_up_and_a_dead_workers_counts_stay(procs: list[Proc]) -> None:
    proc = Proc(
        ["run", "tests.e2e.apps.logged:app", "--port", "0", "--workers", "2", "--metrics-path", "/metrics"]
    )
    procs.append(proc)
    port = proc.wait_ready()
    series = 'veter_requests_total{route="/",status="200"}'
    sent = 0
    # New connections each time, so both workers serve some of them.
    for _ in range(60):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            assert answer.read() == b"hi"
        sent += 1
    last_request = time.monotonic()
    # Another worker's part arrives with its next snapshot (once a second): until
    # then a scrape may count less, never more.
    eventually(lambda: sample(scrape(port), series) == sent, f"{sent} requests counted")
    while time.monotonic() - last_request < 1.5:
        assert sample(scrape(port), series) <= sent
        time.sleep(0.05)
    # Past a snapshot period every worker's file is complete: every scrape, whichever
    # worker answers it, has the whole total.
    for _ in range(10):
        assert sample(scrape(port), series) == sent
    text = scrape(port)
    workers = re.findall(r'^veter_requests_in_flight\{worker="(\d+)"\}', text, re.MULTILINE)
    assert len(workers) == 2, text
    assert sample(text, "veter_workers") == 2

    victim = int(workers[0])
    os.kill(victim, signal.SIGKILL)
    eventually(lambda: sample(scrape(port), "veter_worker_restarts_total") == 1, "the restart counted")
    # The killed worker's requests are still in the total (folded into retired.json);
    # only what it served after its last snapshot could be missing, and it served
    # nothing after the total was complete.
    eventually(lambda: sample(scrape(port), series) >= sent, "totals kept after the restart")
    assert str(victim) not in re.findall(r'worker="(\d+)"', scrape(port))
