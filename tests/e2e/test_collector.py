"""The worker's heap at startup is frozen out of the cyclic collector (gc_freeze).

A full collection walks every tracked object; under a large app (FastAPI, pydantic,
a database driver) that is tens of milliseconds with the loop stopped, which is a
fixed rate's p99. veter collects once when the app has started and freezes what is
alive (docs/design.md, "The collector"), so later full collections walk only what
serving made. Its young generation's threshold is sized from the garbage each young
collection finds, up to `gc_threshold`: high while there is little, so a collection does
not walk the requests in flight every few dozen requests, low enough that an app leaving
cycles behind pauses briefly (gc_adaptive)."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator

import pytest

from veter.collector import GARBAGE_PER_COLLECTION

from .conftest import read_responses
from .processes import Proc

APP = "tests.e2e.apps.collector:app"


def _get(port: int, path: str) -> dict[str, object]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        (answer,), _ = read_responses(sock, 1)
    assert answer.status == 200, answer.content
    got = answer.json()
    assert isinstance(got, dict)
    return got


@pytest.fixture
def run() -> Iterator[object]:
    procs: list[Proc] = []

    def start(*args: str) -> int:
        proc = Proc(["run", APP, "--port", "0", "--access-log", "off", *args])
        procs.append(proc)
        return proc.wait_ready()

    yield start
    for proc in procs:
        proc.close()
        assert "Traceback" not in proc.output(), proc.output()


@pytest.mark.parametrize("mode", [["--single-process"], ["--workers", "1"]], ids=["single process", "worker"])
def test_the_startup_heap_is_frozen_by_default(run, mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    port = run(*mode)
    got = _get(port, "/frozen")
    # veter, the app and their imports are frozen: the collector tracks only what
    # serving has made since, a small part of it.
    assert isinstance(got["frozen"], int) and isinstance(got["tracked"], int)
    assert got["frozen"] > 10_000, got
    assert got["tracked"] < got["frozen"] / 4, got


def test_gc_freeze_off_leaves_the_collector_alone(run) -> None:  # type: ignore[no-untyped-def]
    port = run("--single-process", "--no-gc-freeze")
    got = _get(port, "/frozen")
    # Nothing like the startup heap is frozen (Python 3.12's own start-up leaves a few
    # hundred objects in the permanent generation; 3.11 and 3.14 none).
    assert isinstance(got["frozen"], int) and isinstance(got["tracked"], int)
    assert got["frozen"] < got["tracked"] / 10, got


def test_cycles_made_while_serving_are_still_collected(run) -> None:  # type: ignore[no-untyped-def]
    port = run("--single-process")
    assert _get(port, "/cycle-collected") == {"alive_before": True, "collected": True}


@pytest.mark.parametrize("mode", [["--single-process"], ["--workers", "1"]], ids=["single process", "worker"])
def test_a_fixed_young_threshold_is_the_setting(run, mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    port = run(*mode, "--no-gc-adaptive")
    default = _get(port, "/threshold")["threshold"]
    assert isinstance(default, list) and default[0] == 20_000, default
    # Collections of garbage leave a fixed threshold where it is.
    assert _get(port, "/threshold-after-garbage")["threshold"] == default
    chosen = _get(run(*mode, "--no-gc-adaptive", "--gc-threshold", "5000"), "/threshold")["threshold"]
    # The older generations keep Python's own thresholds.
    assert chosen == [5_000, *default[1:]], chosen


@pytest.mark.parametrize("mode", [["--single-process"], ["--workers", "1"]], ids=["single process", "worker"])
def test_the_young_threshold_follows_the_garbage_found(run, mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    port = run(*mode)
    pythons = list(gc.get_threshold())
    # Collections that find mostly cycles come about every GARBAGE_PER_COLLECTION
    # objects made, or as often as Python's own if that is less often...
    low = max(pythons[0], GARBAGE_PER_COLLECTION * 11 // 10)
    after = _get(port, "/threshold-after-garbage")["threshold"]
    assert isinstance(after, list) and pythons[0] <= after[0] <= low and after[1:] == pythons[1:], after
    # ...collections that find none (objects kept alive) rise to the ceiling (gc_threshold)...
    assert _get(port, "/threshold-holding")["threshold"] == [20_000, *pythons[1:]]
    # ...and it falls again once cycles are made.
    after = _get(port, "/threshold-after-garbage")["threshold"]
    assert isinstance(after, list) and pythons[0] <= after[0] <= low, after
    lower = run(*mode, "--gc-threshold", "5000")
    assert _get(lower, "/threshold-holding")["threshold"] == [5_000, *pythons[1:]]


def test_gc_threshold_zero_leaves_pythons_own(run) -> None:  # type: ignore[no-untyped-def]
    got = _get(run("--single-process", "--gc-threshold", "0"), "/threshold")["threshold"]
    assert got == list(gc.get_threshold()), got


def test_cycles_are_collected_past_the_threshold_unasked(run) -> None:  # type: ignore[no-untyped-def]
    port = run("--single-process", "--gc-threshold", "5000")
    assert _get(port, "/cycles-collected-unasked") == {"collected": True}
