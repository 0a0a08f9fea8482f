"""Deploys behind nginx lose nothing, and a dead instance costs only what it held.

Three veter instances (2 workers each) behind one nginx configured as
docs/deploy.md recommends, under an open-loop load of GETs and POSTs that retries
nothing, a few thousand a second. nginx retries only what is safe (a refused
connect), never a POST that reached an instance, so a request an instance loses
shows up here as a failure. Each test prints its numbers (docs/deploy.md quotes
them). Marked slow: `make test` runs them on the first Python only, since they test
the process model and the proxy, not the interpreter.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.services import Nginx, ServiceError, free_port

from .mixedload import MixedLoad, Report
from .processes import Proc, alive, children_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

APP = "tests.e2e.apps.supervised:app"
#: Requests a second through nginx, half GET, half POST.
RATE = 2500
#: Seconds of load before anything happens: the steady state the deploy is held to.
STEADY = 20
#: Seconds the rolling deploy's load lasts in all (it goes on after the deploy).
TOTAL = 60


class Instance:
    """One ``veter run`` on a fixed port, as a deployment's unit."""

    def __init__(self, port: int, *args: str) -> None:
        self.port = port
        self.args = args
        self.proc = self._start()

    def _start(self) -> Proc:
        proc = Proc(["run", APP, "--port", str(self.port), "--access-log", "off", *self.args])
        proc.wait_ready()
        return proc

    @property
    def workers(self) -> set[int]:
        return set(children_of(self.proc.pid))

    def restart(self) -> float:
        """SIGTERM, wait for the exit (status 0), start again; returns the drain time."""
        began = time.monotonic()
        self.proc.proc.send_signal(signal.SIGTERM)
        code = self.proc.proc.wait(30)
        drained = time.monotonic() - began
        assert code == 0, self.proc.output()[-2000:]
        self.proc.close()
        self.proc = self._start()
        return drained

    def hup(self) -> float:
        """SIGHUP (rolling worker restart); returns once every worker is new and ready."""
        old = self.workers
        began = time.monotonic()
        mark = self.proc.mark()
        self.proc.proc.send_signal(signal.SIGHUP)
        self.proc.wait_for_each(r"worker \d+ ready", len(old), start=mark)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in old) or len(self.workers) != len(old):
            assert time.monotonic() < deadline, f"old workers {old} still alive"
            time.sleep(0.01)
        return time.monotonic() - began

    def close(self) -> None:
        for child in children_of(self.proc.pid):
            os.kill(child, signal.SIGKILL)
        self.proc.close()


@pytest.fixture
def fleet() -> Iterator[tuple[Nginx, list[Instance]]]:
    instances = [Instance(free_port(), "--workers", "2") for _ in range(3)]
    try:
        nginx = Nginx([i.port for i in instances])
        nginx.start()
    except ServiceError:
        for instance in instances:
            instance.close()
        raise
    yield nginx, instances
    nginx.close()
    for instance in instances:
        instance.close()


def wait_served_by(load: MixedLoad, pids: set[int], what: str) -> None:
    """Until a request through nginx is answered by one of ``pids`` (as a rolling
    deploy waits for an instance to take traffic before the next step)."""
    deadline = time.monotonic() + 15
    while not any(o.pid in pids for o in load.report.outcomes[-RATE:]):
        assert time.monotonic() < deadline, f"{what} got no traffic"
        time.sleep(0.01)


def steady_state(load: MixedLoad) -> tuple[float, float]:
    """Waits out STEADY seconds of load; returns that window."""
    load.wait_for(RATE // 2)
    start = time.monotonic()
    load.wait_for(load.report.ok + RATE * STEADY, timeout=STEADY * 3)
    return start, time.monotonic()


def describe(report: Report) -> str:
    return f"{[(o.method, o.error) for o in report.failures[:5]]}"


def _deploy_once(nginx: Nginx, instances: list[Instance]) -> tuple[float, float]:
    """One rolling deploy under the mixed load: every instance restarted, then each
    sent SIGHUP. Asserts nothing was lost; returns (steady p99, deploy p99)."""
    drains, hups = [], []
    with MixedLoad(nginx.port, rate=RATE) as load:
        steady = steady_state(load)
        deploy_start = time.monotonic()
        for n, instance in enumerate(instances):
            drains.append(instance.restart())
            wait_served_by(load, instance.workers, f"instance {n} after its restart")
        for n, instance in enumerate(instances):
            hups.append(instance.hup())
            wait_served_by(load, instance.workers, f"instance {n} after SIGHUP")
        deploy = (deploy_start, time.monotonic())
        left = TOTAL - (deploy[1] - steady[0])
        if left > 0:
            load.wait_for(load.report.ok + int(RATE * left), timeout=left * 3)
        report = load.stop()
    assert not report.failures, (
        f"{len(report.failures)} of {len(report.outcomes)} failed: {describe(report)}\n"
        + (f"nginx: {nginx.errors()}")
    )
    methods = report.by_method()
    steady_p99, deploy_p99 = report.p99_between(*steady), report.p99_between(*deploy)
    print(
        f"\nrolling deploy at {RATE} req/s: {len(report.outcomes)} requests ({methods['GET']} GET, "
        f"{methods['POST']} POST), 0 failed; steady p99 {steady_p99 * 1000:.1f} ms, during the deploy "
        f"({deploy[1] - deploy[0]:.1f} s) {deploy_p99 * 1000:.1f} ms; drains {[f'{d:.2f}' for d in drains]} s, "
        f"SIGHUP restarts {[f'{h:.2f}' for h in hups]} s"
    )
    assert methods["GET"] > RATE * STEADY / 2 * 0.9 and methods["POST"] > RATE * STEADY / 2 * 0.9, methods
    return steady_p99, deploy_p99


def test_rolling_deploy_and_worker_restarts_lose_nothing(fleet: tuple[Nginx, list[Instance]]) -> None:
    # No request may fail in any round. The latency bound (deploy p99 within 2x of
    # steady) gets a second round when the first misses it: on this two-core VM the
    # steady p99 itself jumps from ~5 ms to 30-190 ms in some runs (the code of
    # aa53ded too, 1 run in 4), and one spike decides a single round.
    nginx, instances = fleet
    rounds = []
    for _ in range(2):
        steady_p99, deploy_p99 = _deploy_once(nginx, instances)
        rounds.append(f"{deploy_p99 * 1000:.1f} ms during the deploy, {steady_p99 * 1000:.1f} steady")
        if deploy_p99 <= 2 * steady_p99:
            return
    raise AssertionError(f"p99 over 2x steady in both rounds: {'; '.join(rounds)}")


def test_a_killed_instance_costs_only_its_requests_in_flight(fleet: tuple[Nginx, list[Instance]]) -> None:
    nginx, instances = fleet
    victim = instances[0]
    with MixedLoad(nginx.port, rate=RATE) as load:
        load.wait_for(RATE * 5)  # five seconds of load through every instance first
        workers = victim.workers
        killed_at = time.monotonic()
        os.kill(victim.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers):  # PR_SET_PDEATHSIG ends the workers
            assert time.monotonic() < deadline, "the workers outlived their master"
            time.sleep(0.005)
        gone_at = time.monotonic()
        # nginx routes around it: the load goes on, served by the others.
        load.wait_for(load.report.ok + RATE * 3, timeout=15)
        victim.proc.close()
        victim.proc = victim._start()
        wait_served_by(load, victim.workers, "the restarted instance")
        report = load.stop()
    # A request can fail only if it was in flight on the killed instance: due before
    # its workers were gone and unanswered when the kill came.
    late = [o for o in report.failures if not (o.started <= gone_at and o.started + o.latency >= killed_at)]
    in_flight = [o for o in report.outcomes if o.started <= gone_at and o.started + o.latency >= killed_at]
    print(
        f"\nkill -9 at {RATE} req/s: {len(report.failures)} of {len(report.outcomes)} failed, all among the "
        f"{len(in_flight)} in flight at the kill (all instances); workers gone "
        f"{(gone_at - killed_at) * 1000:.0f} ms after it"
    )
    assert not late, f"failures outside the kill: {[(o.method, o.error) for o in late[:5]]}"
