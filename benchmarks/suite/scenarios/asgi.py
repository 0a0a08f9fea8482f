"""Hosted ASGI apps: the same apps on veter, uvicorn and Granian (issue 14)."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result, md_table, num, value
from ..servers import pick
from .cells import cpu_per_request, throughput

NAME = "asgi"
TITLE = "Hosted ASGI apps: raw ASGI and FastAPI on veter, uvicorn and Granian"
METHOD = """
The same app modules served by each server: `apps/asgi_raw.py` (a raw ASGI 3 app,
JSON serialised per request) by `veter run`, uvicorn (httptools, uvloop) and
Granian's ASGI interface; `apps/fastapi_app.py` by `veter run` and by uvicorn.
One process per server, pinned to CPU 0; wrk (one thread) pinned to CPU 1, closed
loop, c=100, not pipelined. CPU per request: oha open loop at a fixed rate, server
CPU time from /proc divided by the 2xx responses (the number to trust where wrk is
the limit). Every server with its access log off, lifespan off where it has the
switch. Servers interleaved per run, medians.
"""

SERVERS = ["veter-asgi", "uvicorn-raw", "granian-asgi", "veter-fastapi", "fastapi"]
CELLS = ["plaintext c=100", "json c=100"]


def _cpu_rate(settings: Settings) -> int:
    return 2000 if settings.quick else 5000


def plan(settings: Settings) -> Plan:
    cells = [
        throughput("plaintext", 100),
        throughput("json", 100),
        cpu_per_request("plaintext", _cpu_rate(settings)),
        cpu_per_request("json", _cpu_rate(settings)),
    ]
    return Plan(NAME, pick(SERVERS), cells)


def _cpu_cells(result: Result) -> list[str]:
    return [c["key"] for c in result["cells"] if " cpu @" in c["key"]]


PAIRS = [("veter-asgi", "uvicorn-raw"), ("veter-asgi", "granian-asgi"), ("veter-fastapi", "fastapi")]


def table(result: Result) -> str:
    cpu_cells = _cpu_cells(result)
    header = ["server", *[f"{c} req/s" for c in CELLS], *[f"{c} µs/req" for c in cpu_cells]]
    rows = []
    for server in SERVERS:
        row = [server]
        row += [num(value(result, server, c, "rps")) for c in CELLS]
        row += [num(value(result, server, c, "cpu_us_per_req"), 1) for c in cpu_cells]
        rows.append(row)
    for ours_name, base in PAIRS:
        row = [f"{ours_name} ÷ {base}"]
        for c in CELLS:
            ours, theirs = value(result, ours_name, c, "rps"), value(result, base, c, "rps")
            row.append(num(ours / theirs, 2, "x") if ours and theirs else "–")
        for c in cpu_cells:
            ours, theirs = value(result, ours_name, c, "cpu_us_per_req"), value(result, base, c, "cpu_us_per_req")
            # CPU: the peer's cost over ours, so that higher is better here too.
            row.append(num(theirs / ours, 2, "x") if ours and theirs else "–")
        rows.append(row)
    note = (
        "Ratios: throughput veter ÷ peer; CPU columns of the ratio rows are the peer's "
        "µs/request ÷ veter's (both: higher is better)."
    )
    return md_table(header, rows) + "\n\n" + note + "\n\n" + _targets(result)


def _targets(result: Result) -> str:
    """Issue 14's targets, checked against this run (throughput, and CPU per request
    where wrk may be the limit)."""

    def best(ours: str, base: str, cell: str) -> tuple[float | None, float | None]:
        rps_o, rps_b = value(result, ours, cell, "rps"), value(result, base, cell, "rps")
        cpu_cell = next((c for c in _cpu_cells(result) if c.startswith(cell.split()[0])), None)
        cpu_o = value(result, ours, cpu_cell, "cpu_us_per_req") if cpu_cell else None
        cpu_b = value(result, base, cpu_cell, "cpu_us_per_req") if cpu_cell else None
        return (rps_o / rps_b if rps_o and rps_b else None, cpu_b / cpu_o if cpu_o and cpu_b else None)

    checks = [
        ("raw ASGI plaintext ≥ 2.0x uvicorn", "veter-asgi", "uvicorn-raw", CELLS[0], 2.0),
        ("raw ASGI JSON ≥ 2.0x uvicorn", "veter-asgi", "uvicorn-raw", CELLS[1], 2.0),
        ("raw ASGI plaintext ≥ 1.3x Granian ASGI", "veter-asgi", "granian-asgi", CELLS[0], 1.3),
        ("raw ASGI JSON ≥ 1.3x Granian ASGI", "veter-asgi", "granian-asgi", CELLS[1], 1.3),
        ("FastAPI JSON ≥ 1.3x FastAPI on uvicorn", "veter-fastapi", "fastapi", CELLS[1], 1.3),
    ]
    lines = ["Targets from issue 14 (throughput; CPU per request in brackets):", ""]
    for text, ours, base, cell, need in checks:
        rps, cpu = best(ours, base, cell)
        if rps is None:
            lines.append(f"- {text}: not measured")
            continue
        cpu_text = f" [CPU {cpu:.2f}x]" if cpu else ""
        lines.append(f"- {text}: {rps:.2f}x{cpu_text}, {'met' if rps >= need else 'NOT met'}")
    return "\n".join(lines)


def chart(result: Result, path: Path) -> None:
    bars(result, CELLS, "rps", path, "requests/s (closed loop, wrk)")
