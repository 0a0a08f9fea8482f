"""Prometheus metrics, added up across every worker of a master.

Turn them on with ``--metrics-path /metrics``; the path is then served by every
worker (in the text exposition format) and left out of nothing else.

What is counted:

- ``veter_requests_total{route, status}`` and ``veter_request_duration_seconds{route}``
  (a histogram), counted in the Rust core for each response; ``route`` is the
  route's pattern (``/items/{id:int}``), ``(unmatched)`` when none matched;
- ``veter_requests_in_flight``, ``veter_loop_lag_seconds``, ``veter_loop_lag_max_seconds``
  per worker (``worker`` label: its pid), ``veter_loop_stalls_total`` and
  ``veter_requests_shed_total``;
- ``veter_worker_restarts_total`` (workers the master replaced after they died) and
  ``veter_workers``;
- each pool's figures (``veter_pool_*{pool, kind}``): size and readiness, in use and
  waiting per worker, and counters of acquires, acquire time, timeouts, unavailable
  answers and lost connections.

How workers are added up: each worker writes a snapshot of its figures to a
directory the master made (``VETER_METRICS_DIR``) once a second; the worker that
answers ``/metrics`` adds its own live figures to the others' snapshots, so another
worker's figures may be up to a second old. When a worker exits, the master folds
its counters into ``retired.json``, so totals never go down when a worker is
replaced (a counter that went down would look like a reset to Prometheus).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veter.responses import Response

if TYPE_CHECKING:
    from veter.app import App
    from veter.server import Server

__all__ = ["ENV_DIR", "Snapshot", "fold_retired", "mount", "render", "write_master"]

#: Where a master tells its workers to write their snapshots.
ENV_DIR = "VETER_METRICS_DIR"
#: Upper bounds of the latency buckets, seconds (they match the core's).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
UNMATCHED = "(unmatched)"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

HELP = {
    "veter_requests_total": ("counter", "Responses sent, by route pattern and status."),
    "veter_request_duration_seconds": ("histogram", "Time from reading a request to its response, by route."),
    "veter_requests_in_flight": ("gauge", "Handlers that suspended and have not finished, per worker."),
    "veter_requests_shed_total": (
        "counter",
        "Requests answered 503 because they waited past the queue timeout.",
    ),
    "veter_loop_lag_seconds": (
        "gauge",
        "How late the event loop's once-a-second timer last fired, or how long its last stall lasted, per worker.",
    ),
    "veter_loop_lag_max_seconds": ("gauge", "The largest event loop lag seen, per worker."),
    "veter_loop_stalls_total": ("counter", "Times the event loop was blocked past the lag threshold."),
    "veter_worker_restarts_total": ("counter", "Workers the master replaced after they died."),
    "veter_workers": ("gauge", "Worker processes the master runs."),
    "veter_pool_size": ("gauge", "A pool's most connections per worker."),
    "veter_pool_ready": ("gauge", "1 when a pool's server is reachable, per worker."),
    "veter_pool_open": ("gauge", "Connections a pool holds open, per worker."),
    "veter_pool_in_use": ("gauge", "Connections lent out, per worker."),
    "veter_pool_waiting": ("gauge", "Callers waiting for a connection, per worker."),
    "veter_pool_acquires_total": ("counter", "Connections lent out so far."),
    "veter_pool_acquire_seconds_total": ("counter", "Time spent waiting for connections."),
    "veter_pool_timeouts_total": ("counter", "Acquires that gave up (503)."),
    "veter_pool_unavailable_total": ("counter", "Requests answered 503 because the server was unreachable."),
    "veter_pool_connections_lost_total": ("counter", "Connections lost while serving."),
}

_POOL_GAUGES = {"ready": "veter_pool_ready", "open": "veter_pool_open", "in_use": "veter_pool_in_use"}
_POOL_GAUGES["waiting"] = "veter_pool_waiting"
_POOL_COUNTERS = {
    "acquires": "veter_pool_acquires_total",
    "acquire_seconds_total": "veter_pool_acquire_seconds_total",
    "timeouts": "veter_pool_timeouts_total",
    "unavailable": "veter_pool_unavailable_total",
    "connections_lost": "veter_pool_connections_lost_total",
}

Labels = tuple[tuple[str, str], ...]


class Snapshot:
    """Figures of one or more processes: counters and histograms add up, gauges are
    kept per worker (their labels say which)."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, Labels], float] = {}
        self.gauges: dict[tuple[str, Labels], float] = {}
        #: (name, labels) -> (bucket counts, not cumulative, +Inf last; sum; count)
        self.histograms: dict[tuple[str, Labels], tuple[list[int], float, int]] = {}

    def count(self, name: str, labels: dict[str, str], value: float) -> None:
        key = (name, tuple(sorted(labels.items())))
        self.counters[key] = self.counters.get(key, 0) + value

    def gauge(self, name: str, labels: dict[str, str], value: float) -> None:
        self.gauges[(name, tuple(sorted(labels.items())))] = value

    def observe(
        self, name: str, labels: dict[str, str], buckets: list[int], total: float, count: int
    ) -> None:
        key = (name, tuple(sorted(labels.items())))
        old = self.histograms.get(key)
        if old is None:
            self.histograms[key] = (list(buckets), total, count)
        else:
            self.histograms[key] = (
                [a + b for a, b in zip(old[0], buckets, strict=True)],
                old[1] + total,
                old[2] + count,
            )

    def add(self, other: Snapshot, *, gauges: bool = True) -> None:
        for (name, labels), value in other.counters.items():
            self.count(name, dict(labels), value)
        for (name, labels), (buckets, total, count) in other.histograms.items():
            self.observe(name, dict(labels), buckets, total, count)
        if gauges:
            self.gauges.update(other.gauges)

    def to_json(self) -> dict[str, Any]:
        return {
            "counters": [[n, dict(lb), v] for (n, lb), v in self.counters.items()],
            "gauges": [[n, dict(lb), v] for (n, lb), v in self.gauges.items()],
            "histograms": [[n, dict(lb), b, s, c] for (n, lb), (b, s, c) in self.histograms.items()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        snap = cls()
        for name, labels, value in data.get("counters", []):
            snap.count(name, labels, value)
        for name, labels, value in data.get("gauges", []):
            snap.gauge(name, labels, value)
        for name, labels, buckets, total, count in data.get("histograms", []):
            snap.observe(name, labels, buckets, total, count)
        return snap


def collect(server: Server) -> Snapshot:
    """This process's figures, now."""
    snap = Snapshot()
    worker = {"worker": str(os.getpid())}
    dispatcher = server.dispatcher
    if dispatcher is not None:
        for route, statuses, buckets, total, count in dispatcher.metrics_snapshot() or []:
            name = route if route is not None else UNMATCHED
            for status, n in statuses:
                snap.count("veter_requests_total", {"route": name, "status": str(status)}, n)
            snap.observe("veter_request_duration_seconds", {"route": name}, buckets, total, count)
        snap.gauge("veter_requests_in_flight", worker, dispatcher.in_flight)
        snap.count("veter_requests_shed_total", {}, dispatcher.shed_count)
    monitor = server.lag_monitor
    if monitor is not None:
        snap.gauge("veter_loop_lag_seconds", worker, monitor.lag)
        snap.gauge("veter_loop_lag_max_seconds", worker, monitor.max_lag)
        snap.count("veter_loop_stalls_total", {}, monitor.stalls)
    for pool in _pools(server.app):
        stats = pool.stats()
        labels = {"pool": str(stats["name"]), "kind": str(stats["kind"])}
        snap.gauge("veter_pool_size", labels, stats["size"])
        for key, metric in _POOL_GAUGES.items():
            snap.gauge(metric, {**labels, **worker}, float(stats[key]))
        for key, metric in _POOL_COUNTERS.items():
            snap.count(metric, labels, float(stats[key]))
    return snap


def _pools(app: App) -> list[Any]:
    from veter.pools.base import Pool

    return [value for value in vars(app.state).values() if isinstance(value, Pool)]


# -- the shared directory -------------------------------------------------------------


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically: readers see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _read(path: Path) -> Snapshot | None:
    try:
        return Snapshot.from_json(json.loads(path.read_text()))
    except (FileNotFoundError, ValueError):
        return None


def write_worker(directory: Path, server: Server) -> None:
    """This worker's snapshot, for the others to add up."""
    _write_json(directory / f"worker-{os.getpid()}.json", collect(server).to_json())


def fold_retired(directory: Path, pid: int) -> None:
    """A worker exited: add its counters to ``retired.json`` and drop its snapshot
    (its gauges end with it). Called by the master."""
    path = directory / f"worker-{pid}.json"
    gone = _read(path)
    if gone is None:
        return
    retired = _read(directory / "retired.json") or Snapshot()
    retired.add(gone, gauges=False)
    _write_json(directory / "retired.json", retired.to_json())
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def write_master(directory: Path, restarts: int, workers: int) -> None:
    snap = Snapshot()
    snap.count("veter_worker_restarts_total", {}, restarts)
    snap.gauge("veter_workers", {}, workers)
    _write_json(directory / "master.json", snap.to_json())


def gather(server: Server, directory: Path | None) -> Snapshot:
    """Every process's figures: this one's live, the others' from their snapshots."""
    total = collect(server)
    if directory is None:
        return total
    own = f"worker-{os.getpid()}.json"
    for path in sorted(directory.glob("*.json")):
        if path.name == own:
            continue
        snap = _read(path)
        if snap is not None:
            total.add(snap)
    return total


# -- exposition ---------------------------------------------------------------------


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

    body = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
    return "{" + body + "}" if body else ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render(snap: Snapshot) -> str:
    """The Prometheus text exposition format (version 0.0.4)."""
    by_name: dict[str, list[str]] = {}
    for (name, labels), value in sorted(snap.counters.items()) + sorted(snap.gauges.items()):
        by_name.setdefault(name, []).append(f"{name}{_labels(labels)} {_number(value)}")
    for (name, labels), (buckets, total, count) in sorted(snap.histograms.items()):
        lines = by_name.setdefault(name, [])
        running = 0
        for bound, n in zip((*BUCKETS, float("inf")), buckets, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            lines.append(f"{name}_bucket{_labels((*labels, ('le', le)))} {running}")
        lines.append(f"{name}_sum{_labels(labels)} {_number(total)}")
        lines.append(f"{name}_count{_labels(labels)} {count}")
    out = []
    for name in sorted(by_name):
        kind, text = HELP.get(name, ("untyped", name))
        out.append(f"# HELP {name} {text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(by_name[name])
    return "\n".join(out) + "\n"


def mount(app: App, path: str, server: Server) -> None:
    """Serve ``path`` with the figures of every worker (this one's live)."""
    directory = Path(os.environ[ENV_DIR]) if os.environ.get(ENV_DIR) else None

    def metrics(request: Any) -> Response:
        return Response(render(gather(server, directory)), content_type=CONTENT_TYPE)

    app.add_route(path, metrics, ["GET"], name="veter.metrics")


def snapshot_dir() -> Path | None:
    """The directory this worker writes its snapshot to (None: no master)."""
    value = os.environ.get(ENV_DIR)
    return Path(value) if value else None
