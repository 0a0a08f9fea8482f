"""The master/worker process model, with real processes under real load."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from .loadgen import Load
from .processes import Proc, alive, children_of, wait_until, wait_workers_ready


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_kill_worker_under_load_is_replaced_fast(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "2", "--graceful-timeout", "5")
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    workers = children_of(proc.pid)
    assert len(workers) == 2
    with Load(port, clients=4) as load:
        load.wait_for(200)
        mark = proc.mark()
        victim = workers[0]
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        ready = proc.wait_for(r"worker (\d+) ready", timeout=5, start=mark)
        replaced_in = time.monotonic() - killed_at
        load.wait_for(load.stats.ok + 200)
        stats = load.stop()
    assert replaced_in < 1.0, f"replacement took {replaced_in:.2f} s"
    assert int(ready.group(1)) not in workers
    # Only requests in flight on the killed worker may fail: at most one per client
    # connected to it (4 clients, 1 request each at a time).
    assert stats.failed <= 4, stats.errors
    assert len(children_of(proc.pid)) == 2


def test_kill_master_leaves_no_orphans(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "2")
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    workers = children_of(proc.pid)
    assert len(workers) == 2
    os.kill(proc.pid, signal.SIGKILL)
    took = wait_until(lambda: not any(alive(w) for w in workers), timeout=5)
    assert took < 1.0, f"workers outlived the master by {took:.2f} s"
    wait_until(lambda: port_free(port), timeout=1)


def test_sigterm_under_load_completes_in_flight(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "2", "--graceful-timeout", "5")
    port = proc.wait_ready()
    with Load(port, path="/slow?s=0.3", clients=6) as load:
        load.wait_for(12)
        done_before = load.stats.ok
        # Every client has a 0.3 s request in flight: stop sending new ones, then stop.
        load.hold()
        started = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.proc.wait(10)
        took = time.monotonic() - started
        stats = load.stop()
    assert code == 0
    assert took < 5
    assert stats.failed == 0, stats.errors
    assert stats.ok >= done_before + 6, "the in-flight requests completed after SIGTERM"


@pytest.mark.parametrize("keepalive", [True, False])
def test_sighup_rolling_restart_zero_failures(master, keepalive: bool) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "2", "--graceful-timeout", "5")
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    before = set(children_of(proc.pid))
    with Load(port, clients=4, keepalive=keepalive) as load:
        load.wait_for(200)
        mark = proc.mark()
        proc.proc.send_signal(signal.SIGHUP)
        for _ in range(2):
            m = proc.wait_for(r"worker \d+ exited", timeout=15, start=mark)
            mark = proc.lines.index(m.string) + 1
        load.wait_for(load.stats.ok + 200)
        stats = load.stop()
    after = set(children_of(proc.pid))
    assert stats.failed == 0, stats.errors[:5]
    assert len(after) == 2
    assert not before & after, "every worker was replaced"


def test_ttin_ttou_change_worker_count(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "1")
    proc.wait_ready()
    proc.wait_for(r"worker \d+ ready")
    mark = proc.mark()
    proc.proc.send_signal(signal.SIGTTIN)
    proc.wait_for(r"worker \d+ ready", start=mark)
    wait_until(lambda: len(children_of(proc.pid)) == 2, timeout=5)
    mark = proc.mark()
    proc.proc.send_signal(signal.SIGTTOU)
    proc.wait_for(r"worker \d+ exited", start=mark)
    wait_until(lambda: len(children_of(proc.pid)) == 1, timeout=5)


def test_max_requests_recycles_without_failures(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "1", "--max-requests", "100", "--max-requests-jitter", "20")
    port = proc.wait_ready()
    with Load(port, clients=2) as load:
        proc.wait_for(r"asks to be recycled: served \d+ requests", timeout=20)
        proc.wait_for(r"worker \d+ exited", timeout=20)
        load.wait_for(load.stats.ok + 100)
        stats = load.stop()
    assert stats.failed == 0, stats.errors[:5]
    assert len(stats.pids) >= 2, "requests were served by the recycled worker and its replacement"


def test_stuck_worker_is_dumped_and_replaced(master) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "1", "--worker-timeout", "1")
    port = proc.wait_ready()
    first = children_of(proc.pid)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /block-forever HTTP/1.1\r\nHost: t\r\n\r\n")
        proc.wait_for(r"event loop has not turned", timeout=10)
        # faulthandler's dump names the function that blocked the loop.
        proc.wait_for(r"block_forever_handler", timeout=5)
        proc.wait_for(r"worker \d+ ready", timeout=10, start=proc.mark() - 1)
    wait_until(lambda: children_of(proc.pid) and children_of(proc.pid) != first, timeout=10)


def test_reload_restarts_workers_on_change(tmp_path) -> None:  # type: ignore[no-untyped-def]
    module = tmp_path / "reloadable.py"
    module.write_text('import veter\napp = veter.App()\napp.add_route("/", lambda r: "v1")\n')
    proc = Proc(["run", "reloadable:app", "--port", "0", "--reload"], cwd=tmp_path)
    try:
        port = proc.wait_ready()
        proc.wait_for(r"worker \d+ ready")
        assert _get(port) == "v1"
        mark = proc.mark()
        module.write_text('import veter\napp = veter.App()\napp.add_route("/", lambda r: "v2")\n')
        proc.wait_for(r"changed: reloadable.py", start=mark)
        proc.wait_for(r"worker \d+ exited", start=mark)
        assert _get(port) == "v2"
    finally:
        proc.proc.send_signal(signal.SIGTERM)
        proc.proc.wait(10)
        proc.close()


def _get(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1].decode()


def test_worker_at_max_concurrency_leaves_new_connections_to_the_others(master, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = master("--workers", "2", "--max-concurrency", "1")
    port = proc.wait_ready()
    wait_workers_ready(proc, 2)
    mark = tmp_path / "busy-pid"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as held:
        held.sendall(
            f"GET /slow-marked?s=3&mark={mark} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode()
        )
        wait_until(mark.exists, 10)
        busy_pid = mark.read_text()
        start = time.monotonic()
        answers = [_get(port) for _ in range(10)]
        took = time.monotonic() - start
    # Every new connection went to the worker with a free slot; none waited for the busy one.
    assert all(answer.startswith("pid=") and answer != f"pid={busy_pid}" for answer in answers), answers
    assert took < 2.0, took


def _switches(pid: int) -> int:
    """Times the process's threads have been put on a CPU (the third field of each
    thread's schedstat): how often it woke."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[2])
    return total


def test_an_idle_server_barely_wakes(master) -> None:  # type: ignore[no-untyped-def]
    """Idle, the master wakes for its worker's heartbeat and its own once-a-second
    check (not ten times a second), and the worker for its heartbeat, its tick and
    the lag sample; the lag watchdog never wakes the loop (docs/design.md). An idle
    replica of a service costs next to no CPU."""
    proc = master("--workers", "1")
    proc.wait_ready()
    wait_workers_ready(proc, 1)
    (worker,) = children_of(proc.pid)
    master_before, worker_before = _switches(proc.pid), _switches(worker)
    time.sleep(2.0)  # the span whose wakeups are counted
    master_woke = _switches(proc.pid) - master_before
    worker_woke = _switches(worker) - worker_before
    # Master: heartbeat 1/s + its check 1/s (it was 10/s: 20 here). Worker loop: tick
    # 4/s, heartbeat 1/s, lag sample 1/s; its watchdog thread: 4 looks per threshold
    # (16/s at 0.25 s); the old monitor added a 20/s timer (80 here in all). The rest
    # of each bound is room for preemptions on a busy machine (each counts).
    assert master_woke <= 2 * 4, master_woke
    assert worker_woke <= 2 * (6 + 16 + 8), worker_woke
