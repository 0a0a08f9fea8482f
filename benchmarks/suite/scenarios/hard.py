"""Field notes 1, benchmark 2: sequential, concurrent and timed-out awaits (~125 ms)."""

from pathlib import Path

from ..charts import latency_curves
from ..measure import Plan, Settings
from ..report import Result, md_table, measured_servers, num, value
from ..servers import pick
from . import ladder
from .cells import cpu_per_request

NAME = "hard"
TITLE = "hard: await work(); two work() at once; work() under a timeout (~125 ms)"
METHOD = """
work() sleeps 50 ms. The handler awaits work(), then two work() concurrently
(`asyncio.gather`), then work() under a timeout of half its time with the timeout
error swallowed (`asyncio.wait_for`; Tornado gen: `gen.with_timeout`), so ~125 ms is
expected. Same open-loop ladder and give-up rule as sleep50. CPU per request: the
same route at a fixed rate every server holds (oha open loop, enough connections for
twice the expected latency), the server's CPU time (the run time of its process group's
threads, /proc/<pid>/task/*/schedstat, before/after) divided by the 2xx responses: what a server spends on the
handler's timers and tasks, not on waiting.
"""

EXPECTED_S = 0.125


def _cpu_rate(settings: Settings) -> int:
    return 1000 if settings.quick else 2000


def plan(settings: Settings) -> Plan:
    rate = _cpu_rate(settings)
    connections = int(rate * EXPECTED_S * 2)
    # First, so no backlog of the ladder's overloaded top rates is counted in it.
    cells = [cpu_per_request("hard", rate, connections=connections), *ladder.cells("hard", EXPECTED_S, settings)]
    return Plan(NAME, pick(ladder.ASYNC_PEERS), cells)


def _is_cpu(cell: dict[str, object]) -> bool:
    return " cpu @" in str(cell["key"])


def _ladder_only(result: Result) -> Result:
    return {**result, "cells": [c for c in result["cells"] if not _is_cpu(c)]}


def _cpu_table(result: Result) -> str:
    keys = [c["key"] for c in result["cells"] if _is_cpu(c)]
    if not keys:
        return ""
    servers = measured_servers(result)
    header = ["server", *[f"{k} µs/req" for k in keys], *[f"{k} ÷ veter" for k in keys]]
    rows = []
    for server in servers:
        mine = [value(result, server, k, "cpu_us_per_req") for k in keys]
        theirs = [value(result, "veter", k, "cpu_us_per_req") for k in keys]
        ratios = [m / v if m and v else None for m, v in zip(mine, theirs, strict=True)]
        name = f"**{server}**" if server == "veter" else server
        rows.append([name, *[num(m, 1) for m in mine], *[num(r, 2, "x") for r in ratios]])
    note = (
        "CPU per request at the fixed rate (lower is better; the ratio is the server's CPU "
        "over veter's, so above 1.00x means veter spends less):"
    )
    return note + "\n\n" + md_table(header, rows)


def table(result: Result) -> str:
    cpu = _cpu_table(result)
    return ladder.table(_ladder_only(result)) + ("\n\n" + cpu if cpu else "")


def chart(result: Result, path: Path) -> None:
    latency_curves(_ladder_only(result), path)
