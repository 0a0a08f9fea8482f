"""The load generators, pinned to the load CPU: wrk (closed loop), oha (open loop),
wsload (WebSocket echo) and h2load (HTTP/2).

Each call returns a flat dict of numbers plus the exact command, for the report.
"""

import json
import os
import re
import resource
import shlex
import sqlite3
import subprocess
import tempfile
import time
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


# h2load's bound beyond its warm-up and window: connecting, and stopping its clients.
H2LOAD_SLACK_S = 30
_H2_PROTOCOL = re.compile(r"^Application protocol: (\S+)$", re.MULTILINE)
_H2_FINISHED = re.compile(r"^finished in [\d.]+\w+, ([\d.]+) req/s", re.MULTILINE)
_H2_REQUESTS = re.compile(
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout",
    re.MULTILINE,
)
_H2_STATUSES = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.MULTILINE)
_H2_MEAN = re.compile(r"^time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\b", re.MULTILINE)
_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def h2load(
    url: str,
    clients: int,
    streams: int,
    seconds: float,
    warmup: float,
    body: Path | None = None,
    rps_per_client: int | None = None,
    parts: int = 1,
) -> Metrics:
    """HTTP/2 (h2load, one thread): `clients` connections, up to `streams` concurrent
    streams on each, `warmup` seconds of load before a window of `seconds` that alone
    is counted. http:// URLs are h2c by prior knowledge, https:// TLS with ALPN h2;
    anything else negotiated fails the cell. With `body`, POSTs of that file's bytes;
    with `rps_per_client`, each connection starts that many requests per second (a
    fixed rate) instead of as many as it can. Every request that did not succeed (a
    non-2xx status, a stream or connection error, a timeout) is counted, and a run
    with any is returned as an error, not as a rate.

    With `parts` > 1 the window is cut into that many equal windows, each its own h2load
    run on new connections with its own warm-up, back to back: no connection carries
    more than one part's requests (for servers that end a connection after a fixed
    count of streams, which h2load does not reconnect after). The rate is the parts'
    answers over their windows, the latencies those of every part's requests, and the
    first part that fails fails the whole."""
    merged: Metrics = {}
    durations: list[int] = []
    window = seconds / parts
    for _ in range(parts):
        metrics = _h2load_once(url, clients, streams, window, warmup, body, rps_per_client, durations)
        if "error" in metrics:
            return metrics
        _merge(merged, metrics)
    merged["rps"] = sum(merged.pop("part_rps")) / parts
    merged["loadgen_cpu_share"] = max(merged.pop("part_loadgen_cpu_share"))
    merged.update(_latency(sorted(durations)))
    if parts > 1:
        merged["parts"] = parts
        merged["latency_mean_ms"] = sum(durations) / len(durations) / 1000 if durations else None
    return merged


_SUMMED = ("requests", "started", "succeeded", "non_2xx", "errored", "timeout", "errors")


def _merge(merged: Metrics, part: Metrics) -> None:
    """Fold one part's metrics into `merged`: counts add up, the rate and the load
    generator's share are kept per part, the rest is the first part's."""
    for key, value in part.items():
        if key in _SUMMED:
            merged[key] = merged.get(key, 0) + value
        elif key in ("rps", "loadgen_cpu_share"):
            merged.setdefault(f"part_{key}", []).append(value if value is not None else 0.0)
        else:
            merged.setdefault(key, value)


def _h2load_once(
    url: str,
    clients: int,
    streams: int,
    seconds: float,
    warmup: float,
    body: Path | None,
    rps_per_client: int | None,
    durations: list[int],
) -> Metrics:
    """One h2load run (see `h2load`); its successful requests' durations go to `durations`."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "requests.tsv"
        argv = [str(paths.H2LOAD), "-t1", f"-c{clients}", f"-m{streams}", "-D", _ms(seconds)]
        argv += ["--warm-up-time", _ms(warmup), "--log-file", str(log)]
        if body is not None:
            argv += ["-d", str(body), "-H", "content-type: application/octet-stream"]
        if rps_per_client is not None:
            argv += ["--rps", str(rps_per_client)]
        argv = _pinned([*argv, url])
        command = shlex.join(argv).replace(str(log), "requests.tsv")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        try:
            out = subprocess.run(
                argv, capture_output=True, text=True, check=False, timeout=warmup + seconds + H2LOAD_SLACK_S
            )
        except subprocess.TimeoutExpired:
            bound = warmup + seconds + H2LOAD_SLACK_S
            return {"error": f"h2load did not finish within {bound:.0f}s", "command": command}
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        metrics = parse_h2load(out.stdout, out.stderr, command, expected=_h2_protocol(url))
        if "error" not in metrics:
            durations += _h2_durations(log)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        metrics["loadgen_cpu_share"] = cpu / wall if wall else None
    return metrics


def _ms(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


def _h2_protocol(url: str) -> str:
    if url.startswith("https://"):
        return "h2"
    if url.startswith("http://"):
        return "h2c"
    raise ValueError(f"h2load needs an http:// or https:// URL, not {url!r}")


def parse_h2load(stdout: str, stderr: str, command: str, expected: str) -> Metrics:
    """h2load's summary as numbers; an "error" when the protocol it negotiated is not
    `expected`, when no request succeeded, or when any failed."""
    requests, statuses = _H2_REQUESTS.search(stdout), _H2_STATUSES.search(stdout)
    finished = _H2_FINISHED.search(stdout)
    if requests is None or statuses is None or finished is None:
        tail = (stderr.strip() or stdout.strip())[-300:]
        return {"error": f"h2load gave no summary: {tail}", "command": command}
    _, started, done, succeeded, failed, errored, timeout = (int(n) for n in requests.groups())
    _, s3xx, s4xx, s5xx = (int(n) for n in statuses.groups())
    protocol = _H2_PROTOCOL.search(stdout)
    metrics: Metrics = {
        "protocol": protocol.group(1) if protocol else None,
        "requests": done,
        "started": started,
        "succeeded": succeeded,
        "non_2xx": s3xx + s4xx + s5xx,
        "errored": errored,
        "timeout": timeout,
        # h2load's "failed" is every done request that did not succeed (non-2xx and
        # errored alike); timeouts are counted on their own.
        "errors": failed + timeout,
        "command": command,
    }
    if metrics["protocol"] != expected:
        got = metrics["protocol"] or "no protocol (no connection made?)"
        said = stderr.strip().splitlines()[-1:] or [""]
        return {**metrics, "error": f"negotiated {got}, not {expected} {said[0]}".strip()}
    if metrics["errors"]:
        kinds = f"{metrics['non_2xx']} non-2xx, {errored} errored, {timeout} timed out"
        return {**metrics, "error": f"{metrics['errors']} of {done + timeout} requests failed ({kinds})"}
    if succeeded == 0:
        # h2load names h2c as soon as it has sent the preface: a server that does not
        # speak HTTP/2 answers nothing it can count (an HTTP/1.1 400 is not a frame).
        return {**metrics, "error": f"no request answered ({started} started): no HTTP/2 answer"}
    metrics["rps"] = float(finished.group(1))
    mean = _H2_MEAN.search(stdout)
    if mean is not None:
        metrics["latency_mean_ms"] = float(mean.group(1)) * _UNIT_MS[mean.group(2)]
    return metrics


def _h2_durations(log: Path) -> list[int]:
    """Microseconds to the end of the response of each successful request in h2load's
    per-request log (start time, status, duration)."""
    durations = []
    with log.open() as rows:
        for row in rows:
            _, status, micros = row.split("\t", 2)
            if status.startswith("2"):
                durations.append(int(micros))
    return durations


def _latency(durations: list[int]) -> Metrics:
    """p50, p99 and max, in ms, of sorted durations in microseconds."""
    out: Metrics = {}
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        got = _quantile(durations, q)
        out[f"latency_{name}_ms"] = got / 1000 if got is not None else None
    out["latency_max_ms"] = durations[-1] / 1000 if durations else None
    return out
