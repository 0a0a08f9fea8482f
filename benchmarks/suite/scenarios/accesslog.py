"""Issue 6: what the access log costs: plaintext with it on (to a file) vs off."""

import os
from pathlib import Path

from .. import paths
from ..charts import bars
from ..loadgen import Metrics, wrk
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import ASYNC, Argv, Server, Veter

NAME = "accesslog"
TITLE = "accesslog: the access log on (to a file) vs off"
METHOD = """
veter serving plaintext with its access log off and on (default text format, written
to a file on local disk: each worker formats lines in Rust into its own buffer and
appends them with one write per loop iteration on an O_APPEND descriptor), with 1 and 2
workers (a master and workers sharing one socket), all pinned to CPU 0; wrk (one
thread) on CPU 1, plaintext with 100 connections and pipelined (16 requests per write,
256 connections: the cheapest requests, where a log line costs the most in relative
terms). The log file is emptied before each cell; after it, its lines are counted
against the requests wrk completed (a few more lines than requests is normal: wrk
stops counting while its last requests are still being answered).
"""

CELLS = [
    ("plaintext c=100", 100, 1),
    ("plaintext c=256 pipelined x16", 256, 16),
]


def _log_path(workers: int) -> Path:
    return paths.WORK / "logs" / NAME / f"access-{workers}w.log"


def _veter(workers: int, logged: bool) -> Argv:
    def argv(port: int, _workers: int) -> list[str]:
        base = paths.veter_run("benchmarks.apps.veter_app:app")
        if logged:
            base = [*base, "--access-log", str(_log_path(workers))]  # the later flag wins
        return [*base, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]

    return argv


def _label(workers: int, logged: bool) -> str:
    return f"veter {workers}w, log {'on' if logged else 'off'}"


def _servers() -> list[Server]:
    out: list[Server] = []
    for workers in (1, 2):
        for logged in (False, True):
            what = f"veter --workers {workers}, access log {'to a file' if logged else 'off'}"
            out.append(Veter(_label(workers, logged), what, ASYNC, _veter(workers, logged), cwd=paths.REPO))
    return out


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _cell(key: str, connections: int, pipeline: int) -> Cell:
    def run(target: Target) -> Metrics:
        log = next((_log_path(w) for w in (1, 2) if target.server.name == _label(w, True)), None)
        if log is not None:
            os.truncate(log, 0)  # writers append at the end, wherever it is
        before = target.running.cpu_seconds()
        metrics = wrk(target.url("plaintext"), connections, target.settings.seconds, pipeline)
        used = target.running.cpu_seconds() - before
        done = metrics.get("requests") or 0
        metrics["cpu_us_per_req"] = used / done * 1e6 if done else None
        if log is not None:
            lines = _count_lines(log)
            metrics["log_lines"] = lines
            requests = metrics.get("requests") or 0
            metrics["lines_per_request"] = lines / requests if requests else None
        return metrics

    return Cell(key, "plaintext", run, params={"c": connections, "pipeline": pipeline})


def plan(settings: Settings) -> Plan:
    _log_path(1).parent.mkdir(parents=True, exist_ok=True)
    for workers in (1, 2):
        _log_path(workers).touch()
    return Plan(NAME, _servers(), [_cell(*cell) for cell in CELLS])


def table(result: Result) -> str:
    servers = measured_servers(result)
    header = [
        "workers",
        *[f"{key}: off / on req/s (on ÷ off)" for key, _, _ in CELLS],
        *[f"{key}: CPU µs per request off / on" for key, _, _ in CELLS],
        "log lines ÷ requests",
    ]
    rows = []
    for workers in (1, 2):
        off, on = _label(workers, False), _label(workers, True)
        if off not in servers or on not in servers:
            continue
        row = [f"**veter**, {workers} worker{'s' if workers > 1 else ''}"]
        for key, _, _ in CELLS:
            a, b = value(result, off, key, "rps"), value(result, on, key, "rps")
            ratio = num(b / a, 3, "x") if a and b else "–"
            row.append(f"{num(a)} / {num(b)} ({ratio})")
        for key, _, _ in CELLS:
            cpu = [value(result, s, key, "cpu_us_per_req") for s in (off, on)]
            row.append(" / ".join(num(c, 2) for c in cpu))
        per = [value(result, on, key, "lines_per_request") for key, _, _ in CELLS]
        row.append(" / ".join(num(p, 4) for p in per))
        rows.append(row)
    note = (
        "Requests/s, median of runs (higher is better), and the server's CPU time per request (all its "
        "processes, from /proc). The target: the access log costs at most 15% (on ÷ off >= 0.85); the "
        "field's lock-based safe logging cost 70-80%. Without pipelining one wrk thread is the limit "
        "(~170k requests/s here), so the CPU column shows the cost there; pipelined, the server is the limit."
    )
    return note + "\n\n" + md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, [key for key, _, _ in CELLS], "rps", path, "requests/s (closed loop, wrk)")
