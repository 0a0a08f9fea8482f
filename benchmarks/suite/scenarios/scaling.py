"""Issue 4: 1 vs 2 workers, on plaintext and on a handler awaiting 1 ms."""

from pathlib import Path

from .. import paths
from ..charts import bars
from ..loadgen import Metrics, wrk
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import ASYNC, Argv, Server, Veter
from ..variants import uvicorn

NAME = "scaling"
TITLE = "scaling: 1 vs 2 workers"
METHOD = """
The same server with `--workers 1` and `--workers 2` (a master supervising workers
that share one listening socket), closed loop with wrk (one thread): plaintext with 100
connections, plaintext pipelined (16 requests per write, 256 connections: one wrk
thread tops out near 200k plain requests/s, so only pipelining can show a second
worker on plaintext), and a handler awaiting `asyncio.sleep(0.001)` with 400
connections (enough that the sleep, not the client count, is not the limit). This machine has 2
CPUs and wrk needs one, so the question is asked two ways: *CPU 0*: the server is
pinned to CPU 0 as in every other scenario (a second worker can only share it: this
shows what the extra process costs); *CPUs 0-1*: the server may use both CPUs while
wrk runs on CPU 1 (the second worker gets what wrk leaves of CPU 1). The server's CPU
time per request (all its processes, from /proc) shows the efficiency either way.
Starlette on uvicorn `--workers N` is the reference for the same layout.
"""

# (route, cell key, connections, requests per write)
CELLS = [
    ("plaintext", "plaintext c=100", 100, 1),
    ("plaintext", "plaintext c=256 pipelined x16", 256, 16),
    ("sleep1", "sleep1 c=400", 400, 1),
]


def _veter(workers: int) -> Argv:
    def argv(port: int, _workers: int) -> list[str]:
        base = [*paths.veter_run("benchmarks.apps.veter_app:app")]
        return [*base, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]

    return argv


def _starlette(workers: int) -> Argv:
    return lambda port, _workers: uvicorn("starlette_app:app", port, workers)


def _servers() -> list[Server]:
    needs = (paths.PEERS_BIN / "python",)
    out: list[Server] = []
    for cpus, where in (("0", "CPU 0"), ("0,1", "CPUs 0-1")):
        for workers in (1, 2):
            out.append(
                Veter(
                    f"veter {workers}w, {where}",
                    f"veter --workers {workers}, taskset {cpus}",
                    ASYNC,
                    _veter(workers),
                    cwd=paths.REPO,
                    cpus=cpus,
                )
            )
    for workers in (1, 2):
        out.append(
            Server(
                f"starlette {workers}w, CPUs 0-1",
                f"Starlette on uvicorn --workers {workers}, taskset 0,1",
                ASYNC,
                _starlette(workers),
                needs=needs,
                cpus="0,1",
            )
        )
    return out


def _with_cpu(route: str, key: str, connections: int, pipeline: int) -> Cell:
    def run(target: Target) -> Metrics:
        before = target.running.cpu_seconds()
        metrics = wrk(target.url(route), connections, target.settings.seconds, pipeline)
        used = target.running.cpu_seconds() - before
        requests = metrics.get("requests") or 0
        metrics["cpu_us_per_req"] = used / requests * 1e6 if requests else None
        metrics["cpus_used"] = used / target.settings.seconds
        return metrics

    return Cell(key, route, run, params={"route": route, "c": connections, "pipeline": pipeline})


def plan(settings: Settings) -> Plan:
    return Plan(NAME, _servers(), [_with_cpu(*cell) for cell in CELLS])


LAYOUTS = [("veter", "CPU 0"), ("veter", "CPUs 0-1"), ("starlette", "CPUs 0-1")]


def table(result: Result) -> str:
    servers = measured_servers(result)
    header = ["layout", *[f"{key}: 1w / 2w req/s (2w ÷ 1w)" for _, key, _, _ in CELLS], "CPU µs per request, 1w / 2w"]
    rows = []
    for name, where in LAYOUTS:
        one, two = f"{name} 1w, {where}", f"{name} 2w, {where}"
        if one not in servers or two not in servers:
            continue
        row = [f"**{name}**, {where}" if name == "veter" else f"{name}, {where}"]
        for _, key, _, _ in CELLS:
            a, b = value(result, one, key, "rps"), value(result, two, key, "rps")
            ratio = num(b / a, 2, "x") if a and b else "–"
            row.append(f"{num(a)} / {num(b)} ({ratio})")
        cpu = [value(result, s, CELLS[0][1], "cpu_us_per_req") for s in (one, two)]
        row.append(" / ".join(num(c, 1) for c in cpu))
        rows.append(row)
    note = "Requests/s, median of runs (higher is better); CPU µs per request on plaintext."
    return note + "\n\n" + md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, [key for _, key, _, _ in CELLS], "rps", path, "requests/s (closed loop, wrk)")
