"""The load generators, pinned to the load CPU: wrk (closed loop) and oha (open loop).

Each call returns a flat dict of numbers plus the exact command, for the report.
"""

import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from . import paths

Metrics = dict[str, Any]


def _pinned(argv: list[str]) -> list[str]:
    return ["taskset", "-c", paths.LOADGEN_CPU, *argv]


def wrk(url: str, connections: int, seconds: int, pipeline: int = 1, body: Path | None = None) -> Metrics:
    """Closed loop: one wrk thread, `connections` connections, `pipeline` requests per
    write; with `body`, POSTs of that file's bytes as JSON."""
    argv = _pinned(
        [
            str(paths.WRK),
            "-t1",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "5s",
            "-s",
            str(paths.LUA_SCRIPT),
            url,
        ]
    )
    env = {**os.environ, "WRK_PIPELINE": str(pipeline)}
    command = f"WRK_PIPELINE={pipeline} {shlex.join(argv)}"
    if body is not None:
        env["WRK_BODY"] = str(body)
        command = f"WRK_BODY={body.name} {command}"
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("WRK_JSON ")), None)
    if line is None:
        return {"error": f"wrk gave no summary: {out.stderr.strip()[-300:]}", "command": command}
    raw = json.loads(line.removeprefix("WRK_JSON "))
    seconds_run = raw["duration_us"] / 1e6
    errors = sum(raw["errors"].values())
    return {
        "rps": raw["requests"] / seconds_run,
        "requests": raw["requests"],
        "errors": errors,
        "non_2xx": raw["errors"]["status"],
        "latency_p50_ms": raw["latency_us"]["p50"] / 1000,
        "latency_p99_ms": raw["latency_us"]["p99"] / 1000,
        "command": command,
    }


def oha_argv(url: str, rate: int | None, seconds: float, connections: int, body: Path | None = None) -> list[str]:
    """Open loop at `rate` requests/s with coordinated-omission correction, or, with
    rate None, a closed loop of `connections` clients each waiting for its answer;
    with `body`, POSTs of that file's bytes as JSON."""
    pacing = ["-q", str(rate), "--latency-correction"] if rate else []
    post = ["-m", "POST", "-D", str(body), "-H", "Content-Type: application/json"] if body else []
    tail = [*post, "-w", "-t", "10s", "--no-tui", "--output-format", "json", url]
    return _pinned([str(paths.OHA), "-z", f"{seconds}s", *pacing, "-c", str(connections), *tail])


def oha(url: str, rate: int | None, seconds: float, connections: int, body: Path | None = None) -> Metrics:
    argv = oha_argv(url, rate, seconds, connections, body)
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    return parse_oha(out.stdout, out.stderr, shlex.join(argv), rate)


def parse_oha(stdout: str, stderr: str, command: str, rate: int | None) -> Metrics:
    try:
        raw = json.loads(stdout)
    except json.JSONDecodeError:
        return {"error": f"oha gave no JSON: {stderr.strip()[-300:]}", "command": command}
    statuses = {int(k): v for k, v in raw["statusCodeDistribution"].items()}
    ok = sum(v for k, v in statuses.items() if 200 <= k < 300)
    failed = sum(raw["errorDistribution"].values())
    total = sum(statuses.values()) + failed
    pct = raw["latencyPercentiles"]
    summary = raw["summary"]
    result: Metrics = {
        "rate": rate,
        "requests": total,
        "ok": ok,
        "success": ok / total if total else 0.0,
        "non_2xx": sum(v for k, v in statuses.items() if not 200 <= k < 300),
        "achieved_rps": ok / summary["total"] if summary["total"] else 0.0,
        "errors": raw["errorDistribution"],
        "command": command,
    }
    for key, name in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999")):
        value = pct.get(key)
        result[f"{name}_ms"] = value * 1000 if value is not None else None
    for key, name in (("fastest", "min_ms"), ("slowest", "max_ms")):
        value = summary.get(key)
        result[name] = value * 1000 if value is not None else None
    return result


def oha_by_status(url: str, rate: int, seconds: float, connections: int, db: str) -> Metrics:
    """`oha` at a fixed rate, plus latency split by answer: served (2xx) and shed
    (503), from the per-request rows oha writes to the SQLite file `db` (their
    `duration` is latency-corrected: end minus the scheduled start)."""
    argv = oha_argv(url, rate, seconds, connections)
    if os.path.exists(db):
        os.remove(db)
    argv = [*argv[:-1], "--db-url", db, argv[-1]]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    metrics = parse_oha(out.stdout, out.stderr, shlex.join(argv), rate)
    if "error" in metrics:
        return metrics
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, duration, start_latency_correction FROM oha").fetchall()
    for name, wanted in (("served", range(200, 300)), ("shed", (503,))):
        durations = sorted(d * 1000 for status, d, _ in rows if status in wanted)
        metrics[name] = len(durations)
        for label, q in (("p50", 0.5), ("p99", 0.99)):
            metrics[f"{name}_{label}_ms"] = _quantile(durations, q)
        metrics[f"{name}_max_ms"] = durations[-1] if durations else None
        # After the first second: oha opens its connections as it needs them, so the
        # first second of an overload is also a connection storm.
        later = sorted(d * 1000 for status, d, at in rows if status in wanted and (at or 0) >= 1.0)
        for label, q in (("p50", 0.5), ("p99", 0.99)):
            metrics[f"{name}_after1s_{label}_ms"] = _quantile(later, q)
    metrics["shed_share"] = metrics["shed"] / len(rows) if rows else 0.0
    metrics["served_rps"] = metrics["served"] / seconds
    return metrics


def _quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# wsload's own bounds: 60 s to open the connections, 5 s per round trip, 2 s to close.
WSLOAD_SLACK_S = 90


def ws_url(http_url: str) -> str:
    return "ws" + http_url.removeprefix("http")


def wsload(
    url: str,
    connections: int,
    seconds: float,
    size: int = 32,
    server_pgid: int | None = None,
    deflate: bool = False,
) -> Metrics:
    """Closed-loop WebSocket echo (go/wsload): `connections` clients, all connected before
    the clock starts, each sending a `size`-byte text message and waiting for its echo
    before the next. With `server_pgid`, the server's CPU time over the window only.
    With `deflate`, permessage-deflate is required and the messages are JSON documents
    of about `size` bytes, compressed."""
    argv = [str(paths.WSLOAD), "-url", url, "-c", str(connections), "-d", f"{seconds}s", "-size", str(size)]
    if server_pgid:
        argv += ["-server-pgid", str(server_pgid)]
    if deflate:
        argv += ["-deflate"]
    argv = _pinned(argv)
    command = shlex.join(argv)
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=seconds + WSLOAD_SLACK_S)
    except subprocess.TimeoutExpired:
        return {"error": f"wsload did not finish within {seconds + WSLOAD_SLACK_S:.0f}s", "command": command}
    try:
        raw = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {
            "error": f"wsload gave no JSON (exit {out.returncode}): {out.stderr.strip()[-300:]}",
            "command": command,
        }
    metrics: Metrics = {
        "connections": raw["connections"],
        "connected": raw["connected"],
        "connect_errors": raw["connect_errors"],
        "connect_s": raw["connect_s"],
        "command": command,
    }
    if raw.get("error"):
        return {**metrics, "error": raw["error"]}
    latency = raw.get("latency_ms") or {}
    metrics.update(
        {
            "round_trips": raw["round_trips"],
            "round_trips_per_s": raw["round_trips_per_s"],
            "errors": raw["errors"],
            "error_kinds": raw["error_kinds"],
            "unfinished": raw["unfinished"],
            "loadgen_cpu_share": raw["loadgen_cpu_s"] / raw["duration_s"],
        }
    )
    if deflate:
        metrics["compressed_share"] = raw["compressed_echoes"] / raw["round_trips"] if raw["round_trips"] else None
        metrics["extensions"] = raw.get("extensions")
    for name in ("p50", "p90", "p99", "p999", "max", "mean"):
        metrics[f"{name}_ms"] = latency.get(name)
    if raw.get("first_error"):
        metrics["first_error"] = raw["first_error"]
    if "server_cpu_s" in raw and raw["round_trips"]:
        metrics["server_cpu_s"] = raw["server_cpu_s"]
        metrics["cpu_us_per_round_trip"] = raw["server_cpu_s"] / raw["round_trips"] * 1e6
    return metrics
