"""Field notes 3: one route blocks 500 ms in sync code while a fast route is loaded."""

import shlex
import subprocess
from pathlib import Path

from ..charts import bars
from ..loadgen import Metrics, oha, oha_argv, parse_oha
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import pick
from .cells import open_loop

NAME = "blocking"
TITLE = "blocking: a 500 ms blocking route next to a loaded fast route"
METHOD = """
`/block` calls `time.sleep(0.5)` the way each peer recommends for blocking code: veter
`blocking=True`; aiohttp, Sanic and Tornado `run_in_executor`; Starlette and FastAPI a
plain `def` endpoint (their thread pool); gunicorn sync workers block by design (3
workers). While oha offers `/block` 8 requests/s (16 connections; ~4 blocked at any time, more
than gunicorn's 3 workers), a second oha offers
the fast route `/` a fixed rate (open loop, latency-corrected). The baseline cell is the
same fast-route load without the blocking traffic. Both oha processes share CPU 1.
"""

SERVERS = ["veter", "aiohttp", "sanic", "uvicorn-starlette", "fastapi", "tornado", "gunicorn-falcon"]
BLOCK_RATE = 8


def _fast_rate(settings: Settings) -> int:
    return 200 if settings.quick else 1000


def _under_blocking(rate: int) -> Cell:
    def run(target: Target) -> Metrics:
        seconds = target.settings.latency_seconds
        argv = oha_argv(target.url("block"), BLOCK_RATE, seconds + 1, 16)
        background = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            metrics = oha(target.url("plaintext"), rate, seconds, 64)
        finally:
            out, err = background.communicate(timeout=seconds + 60)
        blocked = parse_oha(out, err, shlex.join(argv), BLOCK_RATE)
        # The blocking route must really have been served, or the fast route's numbers mean nothing.
        for key in ("success", "p50_ms", "p99_ms", "ok"):
            metrics[f"block_{key}"] = blocked.get(key)
        return metrics

    return Cell(f"fast @{rate}/s + /block @{BLOCK_RATE}/s", "block", run, params={"rate": rate})


def plan(settings: Settings) -> Plan:
    rate = _fast_rate(settings)
    return Plan(NAME, pick(SERVERS), [open_loop("plaintext", rate, 64), _under_blocking(rate)])


def table(result: Result) -> str:
    keys = [c["key"] for c in result["cells"]]
    header = ["server", *[f"{k}: p50 / p99 / max (ok)" for k in keys], "/block p50 (ok)"]
    rows = []
    for server in measured_servers(result):
        row = [f"**{server}**" if server == "veter" else server]
        for key in keys:
            got = [value(result, server, key, m) for m in ("p50_ms", "p99_ms", "max_ms")]
            ok = value(result, server, key, "success")
            row.append(" / ".join(num(g, 1) for g in got) + f" ms ({num((ok or 0) * 100, 1)}%)")
        block_ok = value(result, server, keys[-1], "block_success")
        block_p50 = value(result, server, keys[-1], "block_p50_ms")
        row.append(f"{num(block_p50, 0)} ms ({num((block_ok or 0) * 100, 1)}%)")
        rows.append(row)
    note = (
        "Fast-route latency in ms (lower is better). The last column shows the blocking route was "
        "really served (~500 ms each); a server that cannot run it there has no valid row."
    )
    return note + "\n\n" + md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, [c["key"] for c in result["cells"]], "p99_ms", path, "fast route p99, ms")
