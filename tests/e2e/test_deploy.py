"""A rolling deploy behind nginx loses nothing.

Three veter instances behind one nginx (configured as docs/deploy.md recommends);
each instance in turn gets SIGTERM, drains, exits and is started again on its port,
while an open-loop load of GETs and POSTs that retries nothing goes through nginx.
nginx itself retries only what is safe (a refused connect), never a POST that reached
an instance, so a request an instance loses shows up here as a 502.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.services import Nginx, ServiceError, free_port

from .mixedload import MixedLoad
from .processes import Proc, children_of

APP = "tests.e2e.apps.supervised:app"


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


def test_rolling_deploy_behind_nginx_loses_nothing(fleet: tuple[Nginx, list[Instance]]) -> None:
    nginx, instances = fleet
    events: list[tuple[str, float]] = []
    with MixedLoad(nginx.port, rate=400) as load:
        load.wait_for(400)
        for n, instance in enumerate(instances):
            events.append((f"instance {n} restarted", time.monotonic()))
            instance.restart()
            # As a real rolling deploy does: the next instance goes only once this
            # one takes traffic through nginx again (nginx stops sending to an
            # instance that refused a connect for its fail_timeout).
            new_workers = set(children_of(instance.proc.pid))
            deadline = time.monotonic() + 15
            while not any(o.pid in new_workers for o in load.report.outcomes[-400:]):
                assert time.monotonic() < deadline, f"instance {n} got no traffic after its restart"
                time.sleep(0.05)
        report = load.stop()
    failures = report.failures
    assert not failures, (
        f"{len(failures)} of {len(report.outcomes)} failed: {[(o.method, o.error) for o in failures[:5]]}\n"
        f"events: {events}\nnginx: {nginx.errors()}"
    )
    methods = report.by_method()
    assert methods["GET"] > 500 and methods["POST"] > 500, methods
