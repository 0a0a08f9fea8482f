"""The engine: veter against uvicorn raw ASGI, Japronto and the Python floor (issues 2 and 12)."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result, md_table, num, value
from ..servers import pick
from .cells import cpu_per_request, throughput

NAME = "engine"
TITLE = "Engine: veter vs uvicorn raw ASGI, Japronto and the Python floor"
METHOD = """
One process per server, pinned to CPU 0; wrk (one thread) pinned to CPU 1. Closed loop:
c=100 not pipelined, c=256 pipelined 16 requests per write (our own wrk Lua script).
CPU per request: oha open loop at a fixed rate, server CPU time (the run time of the
server's process group's threads, /proc/<pid>/task/*/schedstat, before/after) divided by the 2xx responses; it is
the number to trust where wrk, not the server, is the bottleneck (~150-300k req/s
here). The floor (`apps/pyfloor.py`) is a uvloop Protocol parsing with httptools and
writing one fixed response per request (one Python callback per request, responses
from one read in one write); it answers the JSON route with the same fixed text, so
its JSON row is the floor, not a serialiser. Japronto runs on Python 3.7 (the last it
builds for). Servers interleaved per run, medians.
"""

SERVERS = ["veter", "uvicorn-raw", "pyfloor", "japronto"]
CELLS = ["plaintext c=100", "json c=100", "plaintext c=256 pipelined x16", "json c=256 pipelined x16"]


def _cpu_rate(settings: Settings) -> int:
    return 5000 if settings.quick else 10000


def plan(settings: Settings) -> Plan:
    cells = [
        throughput("plaintext", 100),
        throughput("json", 100),
        throughput("plaintext", 256, 16),
        throughput("json", 256, 16),
        cpu_per_request("plaintext", _cpu_rate(settings)),
        cpu_per_request("json", _cpu_rate(settings)),
    ]
    return Plan(NAME, pick(SERVERS), cells)


def _cpu_cells(result: Result) -> list[str]:
    return [c["key"] for c in result["cells"] if " cpu @" in c["key"]]


def table(result: Result) -> str:
    cpu_cells = _cpu_cells(result)
    header = ["server", *[f"{c} req/s" for c in CELLS], *[f"{c} µs/req" for c in cpu_cells]]
    rows = []
    for server in SERVERS:
        row = [server]
        row += [num(value(result, server, c, "rps")) for c in CELLS]
        row += [num(value(result, server, c, "cpu_us_per_req"), 1) for c in cpu_cells]
        rows.append(row)
    for base in ("pyfloor", "uvicorn-raw", "japronto"):
        row = [f"veter ÷ {base}"]
        for c in CELLS:
            ours, theirs = value(result, "veter", c, "rps"), value(result, base, c, "rps")
            row.append(num(ours / theirs, 2, "x") if ours and theirs else "–")
        for c in cpu_cells:
            ours, theirs = value(result, "veter", c, "cpu_us_per_req"), value(result, base, c, "cpu_us_per_req")
            row.append(num(ours / theirs, 2, "x") if ours and theirs else "–")
        rows.append(row)
    note = "Ratios: throughput veter ÷ peer (higher is better); CPU µs/request veter ÷ peer (lower is better)."
    return md_table(header, rows) + "\n\n" + note + "\n\n" + _targets(result)


def _targets(result: Result) -> str:
    """Issue 2's targets, checked against this run."""

    def rps(server: str, cell: str) -> float | None:
        return value(result, server, cell, "rps")

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a and b else None

    plain, json_ = rps("veter", CELLS[0]), rps("veter", CELLS[1])
    piped, piped_json = rps("veter", CELLS[2]), rps("veter", CELLS[3])
    floor, uvicorn = rps("pyfloor", CELLS[0]), rps("uvicorn-raw", CELLS[0])
    checks = [
        ("plaintext ≥ 1.0x the Python floor (2)", ratio(plain, floor), 1.0),
        ("plaintext ≥ 2.0x uvicorn raw ASGI (2)", ratio(plain, uvicorn), 2.0),
        ("pipelined ≥ 5x own non-pipelined (2)", ratio(piped, plain), 5.0),
        ("JSON within 15% of plaintext (2)", ratio(json_, plain), 0.85),
        ("pipelined ≥ 1.0x the Python floor (12)", ratio(piped, rps("pyfloor", CELLS[2])), 1.0),
        ("pipelined ≥ 1.5x Japronto (12)", ratio(piped, rps("japronto", CELLS[2])), 1.5),
        ("pipelined JSON within 10% of pipelined plaintext (12)", ratio(piped_json, piped), 0.90),
    ]
    lines = ["Targets from issues 2 and 12 (closed loop; see the CPU columns where wrk is the limit):", ""]
    for text, got, need in checks:
        if got is None:
            lines.append(f"- {text}: not measured")
        else:
            lines.append(f"- {text}: {got:.2f}x, {'met' if got >= need else 'NOT met'}")
    return "\n".join(lines)


def chart(result: Result, path: Path) -> None:
    bars(result, CELLS, "rps", path, "requests/s (closed loop, wrk; log scale)", log=True)
