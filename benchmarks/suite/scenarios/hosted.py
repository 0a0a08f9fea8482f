"""What the hosted-app scenarios (asgi, wsgi) share: the plan and the table of
throughput, CPU per request, ratios against the peers and issue 14's targets."""

from ..measure import Plan, Settings
from ..report import Result, md_table, num, value
from ..servers import pick
from .cells import cpu_per_request, throughput

CELLS = ["plaintext c=100", "json c=100"]

#: (text, ours, peer, cell, the ratio it needs)
Check = tuple[str, str, str, str, float]


def plan(name: str, servers: list[str], settings: Settings) -> Plan:
    rate = 2000 if settings.quick else 5000
    cells = [
        throughput("plaintext", 100),
        throughput("json", 100),
        cpu_per_request("plaintext", rate),
        cpu_per_request("json", rate),
    ]
    return Plan(name, pick(servers), cells)


def _cpu_cells(result: Result) -> list[str]:
    return [c["key"] for c in result["cells"] if " cpu @" in c["key"]]


def table(result: Result, servers: list[str], pairs: list[tuple[str, str]], checks: list[Check]) -> str:
    cpu_cells = _cpu_cells(result)
    header = ["server", *[f"{c} req/s" for c in CELLS], *[f"{c} µs/req" for c in cpu_cells]]
    rows = []
    for server in servers:
        row = [server]
        row += [num(value(result, server, c, "rps")) for c in CELLS]
        row += [num(value(result, server, c, "cpu_us_per_req"), 1) for c in cpu_cells]
        rows.append(row)
    for ours_name, base in pairs:
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
    return md_table(header, rows) + "\n\n" + note + "\n\n" + _targets(result, checks)


def _targets(result: Result, checks: list[Check]) -> str:
    """Issue 14's targets, checked against this run (throughput, and CPU per request
    where wrk may be the limit)."""

    def best(ours: str, base: str, cell: str) -> tuple[float | None, float | None]:
        rps_o, rps_b = value(result, ours, cell, "rps"), value(result, base, cell, "rps")
        cpu_cell = next((c for c in _cpu_cells(result) if c.startswith(cell.split()[0])), None)
        cpu_o = value(result, ours, cpu_cell, "cpu_us_per_req") if cpu_cell else None
        cpu_b = value(result, base, cpu_cell, "cpu_us_per_req") if cpu_cell else None
        return (rps_o / rps_b if rps_o and rps_b else None, cpu_b / cpu_o if cpu_o and cpu_b else None)

    lines = ["Targets from issue 14 (throughput; CPU per request in brackets):", ""]
    for text, ours, base, cell, need in checks:
        rps, cpu = best(ours, base, cell)
        if rps is None:
            lines.append(f"- {text}: not measured")
            continue
        cpu_text = f" [CPU {cpu:.2f}x]" if cpu else ""
        lines.append(f"- {text}: {rps:.2f}x{cpu_text}, {'met' if rps >= need else 'NOT met'}")
    return "\n".join(lines)
