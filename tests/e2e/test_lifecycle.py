"""No request lost at a lifecycle event: SIGTERM, SIGHUP, recycling, scale-down.

The load mixes GET with POST over keep-alive and new connections and retries
nothing (tests/e2e/mixedload.py), so every reset, refused connect, early close,
timeout and non-2xx answer counts.
"""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from .mixedload import MixedLoad, Report
from .processes import wait_until, wait_workers_ready

#: Every run here has its access log off (the load is too much for the test's pipe).
QUIET = ("--access-log", "off")
MODES = {"shared socket": [], "reuse-port": ["--reuse-port"]}


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize(
    "args",
    [["--workers", "2"], ["--workers", "2", "--reuse-port"], ["--single-process"]],
    ids=["shared socket", "reuse-port", "single process"],
)
def test_sigterm_refuses_new_connections_at_once(master, args: list[str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc = master(*QUIET, *args)
    port = proc.wait_ready()
    if "--workers" in args:
        wait_workers_ready(proc, 2)
    mark = tmp_path / "in-flight"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
        slow.sendall(f"GET /slow-marked?s=1&mark={mark} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        wait_until(mark.exists, 10)
        proc.proc.send_signal(signal.SIGTERM)
        # The scenario of the report: a client that connects 200 ms after the
        # SIGTERM must be refused at once (and so go to another instance), not
        # accepted into a backlog that nobody serves and reset later.
        time.sleep(0.2)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        answer = _read_all(slow)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]
    assert b"Connection: close" in answer
    assert proc.proc.wait(10) == 0


def _per_event(report: Report, events: list[tuple[str, float]], end: float) -> dict[str, str]:
    """Failures counted per event (from its signal to the next event's), with when
    each came, in seconds after the event's signal."""
    out = {}
    for i, (name, began) in enumerate(events):
        until = events[i + 1][1] if i + 1 < len(events) else end
        failed = report.failures_between(began, until)
        total = sum(1 for o in report.outcomes if began <= o.started < until)
        out[name] = f"{len(failed)} failed of {total}"
        if failed:
            out[name] += ": " + "; ".join(
                f"{o.method} at +{o.started - began:.3f} s: {o.error}" for o in failed[:3]
            )
    return out


# A minute of mixed load per mode: on the first Python only (the process model is
# the same on every version; CI's other Pythons skip slow tests).
@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_lifecycle_events_lose_no_request(master, mode: str) -> None:  # type: ignore[no-untyped-def]
    proc = master(
        *QUIET,
        "--workers",
        "2",
        "--max-requests",
        "700",
        "--max-requests-jitter",
        "100",
        "--graceful-timeout",
        "15",
        *MODES[mode],
    )
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    events: list[tuple[str, float]] = [("warm-up", 0.0)]
    with MixedLoad(port, rate=300) as load:
        load.wait_for(150)
        # 1. Recycling by --max-requests: a worker asks, its replacement starts,
        #    then the old one drains and exits.
        mark = proc.mark()
        events.append(("--max-requests", time.monotonic()))
        proc.wait_for_each(r"asks to be recycled: served \d+ requests", 1, mark)
        proc.wait_for_each(r"worker \d+ exited", 1, mark)
        # 2. and 3. Two rolling restarts.
        for name in ("SIGHUP", "SIGHUP again"):
            mark = proc.mark()
            events.append((name, time.monotonic()))
            proc.proc.send_signal(signal.SIGHUP)
            proc.wait_for_each(r"worker \d+ exited", 2, mark)
        # 4. Scale up, then down: SIGTTOU retires the newest worker.
        mark = proc.mark()
        events.append(("SIGTTIN", time.monotonic()))
        proc.proc.send_signal(signal.SIGTTIN)
        proc.wait_for_each(r"worker \d+ ready", 1, mark)
        mark = proc.mark()
        events.append(("SIGTTOU", time.monotonic()))
        proc.proc.send_signal(signal.SIGTTOU)
        proc.wait_for_each(r"worker \d+ exited", 1, mark)
        load.wait_for(load.report.ok + 300)
        end = time.monotonic()
        report = load.stop()
    per_event = _per_event(report, events, end)
    assert not report.failures, (
        "\n".join(f"{k}: {v}" for k, v in per_event.items()) + "\n" + proc.output()[-3000:]
    )
    methods = report.by_method()
    assert methods["GET"] > 500 and methods["POST"] > 500, methods
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(20) == 0
