"""Wheels: one abi3 wheel (the stable ABI, Python 3.11+) or one wheel per Python
version? The same code built both ways, on the engine scenario's cells (issue 16)."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result, md_table, num, value
from ..servers import pick
from .cells import cpu_per_request, throughput

NAME = "wheels"
TITLE = "Wheels: one abi3 wheel vs one wheel per Python version"
METHOD = """
The same commit built twice with `maturin build --release`: `veter` as the wheel for
this interpreter (what `make build` installs; CPython's full API), `veter-abi3` with
PyO3's `abi3-py311` feature (the limited API: one wheel for Python 3.11 and newer).
The floor is there to show the run's scale. The engine scenario's cells: server pinned
to CPU 0, wrk (one thread) or oha on CPU 1, closed loop at c=100 and pipelined x16 at
c=256, CPU per request at a fixed open-loop rate. Servers interleaved per run, medians.
"""

SERVERS = ["veter", "veter-abi3", "pyfloor"]
CELLS = ["plaintext c=100", "json c=100", "plaintext c=256 pipelined x16", "json c=256 pipelined x16"]


def plan(settings: Settings) -> Plan:
    rate = 5000 if settings.quick else 10000
    cells = [
        throughput("plaintext", 100),
        throughput("json", 100),
        throughput("plaintext", 256, 16),
        throughput("json", 256, 16),
        cpu_per_request("plaintext", rate),
        cpu_per_request("json", rate),
    ]
    return Plan(NAME, pick(SERVERS), cells)


def table(result: Result) -> str:
    cpu_cells = [c["key"] for c in result["cells"] if " cpu @" in c["key"]]
    header = ["server", *[f"{c} req/s" for c in CELLS], *[f"{c} µs/req" for c in cpu_cells]]
    rows = []
    for server in SERVERS:
        row = [server]
        row += [num(value(result, server, c, "rps")) for c in CELLS]
        row += [num(value(result, server, c, "cpu_us_per_req"), 1) for c in cpu_cells]
        rows.append(row)
    row = ["veter ÷ veter-abi3"]
    for c in CELLS:
        ours, theirs = value(result, "veter", c, "rps"), value(result, "veter-abi3", c, "rps")
        row.append(num(ours / theirs, 2, "x") if ours and theirs else "–")
    for c in cpu_cells:
        ours, theirs = value(result, "veter", c, "cpu_us_per_req"), value(result, "veter-abi3", c, "cpu_us_per_req")
        row.append(num(ours / theirs, 2, "x") if ours and theirs else "–")
    rows.append(row)
    note = (
        "Ratios: throughput per-version ÷ abi3 (above 1: the per-version wheel is faster); "
        "CPU µs/request per-version ÷ abi3 (below 1: it uses less CPU)."
    )
    return md_table(header, rows) + "\n\n" + note


def chart(result: Result, path: Path) -> None:
    bars(result, CELLS, "rps", path, "requests/s (closed loop, wrk; log scale)", log=True)
