"""Field notes 5: handler sleep x concurrent clients, veter vs Sanic vs Tornado."""

from pathlib import Path

from ..charts import heatmaps
from ..measure import Plan, Settings
from ..report import Result, md_table, measured_servers, num, value
from ..servers import pick
from .cells import closed_clients

NAME = "matrix"
TITLE = "matrix: handler sleep x concurrent clients (min / p50 / p99 / max)"
METHOD = """
A closed loop like the field's client threads: N oha connections, each sending its
next request when the previous answer arrives, for the cell's duration. The handler
awaits 1, 10, 50 or 100 ms. Latency in ms: min / p50 / p99 / max.
"""

SLEEPS = [1, 10, 50, 100]
CLIENTS = [1, 10, 50, 100]
QUICK_SLEEPS = [1, 50]
QUICK_CLIENTS = [1, 100]


def plan(settings: Settings) -> Plan:
    sleeps = QUICK_SLEEPS if settings.quick else SLEEPS
    clients = QUICK_CLIENTS if settings.quick else CLIENTS
    cells = []
    for sleep in sleeps:
        for n in clients:
            cell = closed_clients(f"sleep{sleep}", n)
            cell.params.update({"sleep": sleep, "clients": n})
            cells.append(cell)
    return Plan(NAME, pick(["veter", "sanic", "tornado"]), cells)


def _axes(result: Result) -> tuple[list[int], list[int]]:
    sleeps = sorted({c["sleep"] for c in result["cells"]})
    clients = sorted({c["clients"] for c in result["cells"]})
    return sleeps, clients


def table(result: Result) -> str:
    sleeps, clients = _axes(result)
    parts = []
    for server in measured_servers(result):
        rows = []
        for sleep in sleeps:
            row = [f"{sleep} ms"]
            for n in clients:
                key = next(c["key"] for c in result["cells"] if c["sleep"] == sleep and c["clients"] == n)
                got = [value(result, server, key, m) for m in ("min_ms", "p50_ms", "p99_ms", "max_ms")]
                row.append(" / ".join(num(g, 1) for g in got))
            rows.append(row)
        parts.append(f"**{server}**\n\n" + md_table(["sleep", *[f"{n} clients" for n in clients]], rows))
    return "\n\n".join(parts)


def chart(result: Result, path: Path) -> None:
    sleeps, clients = _axes(result)
    heatmaps(result, sleeps, clients, "p99_ms", path)
