"""Shared by sleep50 and hard: an open-loop rate ladder, stopping a server at its limit."""

from ..measure import Cell, Settings
from ..report import Result, md_table, measured_servers, num, value
from .cells import open_loop

RATES = [1000, 2000, 4000, 8000, 16000]
QUICK_RATES = [1000, 4000]
ASYNC_PEERS = [
    "veter",
    "aiohttp",
    "sanic",
    "uvicorn-starlette",
    "fastapi",
    "blacksheep",
    "tornado",
    "tornado-gen",
]


def rates(settings: Settings) -> list[int]:
    return QUICK_RATES if settings.quick else RATES


def cells(route: str, expected_s: float, settings: Settings) -> list[Cell]:
    """Enough connections for the offered rate at twice the expected latency, so the
    load generator never runs out of connections before the server gives up."""
    out = []
    for rate in rates(settings):
        connections = min(4096, max(64, int(rate * expected_s * 2)))
        out.append(open_loop(route, rate, connections, ladder=route))
    return out


def table(result: Result) -> str:
    keys = [c["key"] for c in result["cells"]]
    header = ["server", *[f"{c['rate']}/s p50 / p90 / p99 / p99.9 (ok)" for c in result["cells"]]]
    rows = []
    for server in measured_servers(result):
        row = [f"**{server}**" if server == "veter" else server]
        for key in keys:
            p99 = value(result, server, key, "p99_ms")
            if p99 is None:
                row.append("gave up")
                continue
            got = [value(result, server, key, m) for m in ("p50_ms", "p90_ms", "p99_ms", "p999_ms")]
            ok = value(result, server, key, "success")
            row.append(" / ".join(num(g, 0) for g in got) + f" ms ({num((ok or 0) * 100, 1)}%)")
        rows.append(row)
    note = (
        "Latency in ms with coordinated-omission correction; 'gave up' = not run because the "
        "server passed p99 > 1 s or < 99% success at a lower rate."
    )
    return note + "\n\n" + md_table(header, rows)
