"""Which Python to run veter on: the same apps on CPython 3.11 to 3.15, instructions and
CPU per request, and zuvloop in place of uvloop on 3.14 (issue 39)."""

import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

from ..charts import grouped_panels
from ..loadgen import Metrics, wrk
from ..measure import Cell, Plan, Settings, Target
from ..paths import BENCH, VETER_PYTHONS
from ..report import Result, md_table, num, value
from ..servers import ALL, Server, Veter, on_python
from .cells import cpu_per_request

NAME = "pythons"
TITLE = "Pythons: veter on CPython 3.11 to 3.15, instructions and CPU per request"
METHOD = """
The same four apps served by `veter run` on each Python, from the repo's venvs with
veter built into each (release): `.venv` (3.11) and `.venv-3.12` ... `.venv-3.15`
(`make py-versions-prepare EXTRA_PYTHONS="3.12 3.13 3.14 3.15"`). The builds differ:
3.11, 3.12 and 3.13 are pyenv's (`-O3`, no PGO, no LTO); 3.14 and 3.15 are Debian
sid's (`scripts/install-python.sh`; Debian builds with PGO and LTO). The row "3.11,
Debian's build" is veter on Debian 12's own `/usr/bin/python3.11` (PGO and LTO; a
wheel of the same code, `setup/install.sh`), to tell the build from the version. Columns: `def` handlers answering
plaintext and JSON (`apps/veter_app.py`), an `async def` handler answering plaintext
(`apps/veter_async.py`), the raw ASGI app hosted (`apps/asgi_raw.py`, plaintext), and
a typed `def` handler taking the 10-field JSON order as a msgspec Struct and answering
it (`apps/typed_veter.py`, `POST /order`). Instructions per request: callgrind over
veter's in-memory path (`benchmarks/micro/instructions.py` run by that Python; its
scenarios plaintext, json, async, asgi and typed_post are the same handlers and the
same kind of request, without sockets), counted once per run (the counts are
deterministic). CPU per request: one worker pinned to CPU 0, oha at a fixed open-loop
rate pinned to CPU 1, the worker's CPU time from /proc divided by the 2xx answers
(sockets, the event loop and the kernel included). Rows "3.14, zuvloop": the same
3.14 servers with zuvloop's loop where veter asks uvloop for one
(`benchmarks/micro/force_loop`). Servers interleaved per run, medians.
"""

INSTRUCTIONS = BENCH / "micro" / "instructions.py"
BODY = BENCH / "apps" / "order.json"

#: The table's columns: (heading, server kind, route of its CPU cell, instructions.py scenario).
COLUMNS = [
    ("plaintext", "native", "plaintext", "plaintext"),
    ("JSON", "native", "json", "json"),
    ("async", "async", "plaintext", "async"),
    ("hosted ASGI", "asgi", "plaintext", "asgi"),
    ("typed POST", "typed", "order", "typed_post"),
]
KINDS = ["native", "async", "asgi", "typed"]
ZUVLOOP = "-zuvloop"


def _rows() -> list[tuple[str, str]]:
    """(row label, server name suffix): each Python, then 3.14 on zuvloop."""
    rows = [(version, version) for version in VETER_PYTHONS]
    return [rows[0], ("3.11, Debian's build", "3.11-debian"), *rows[1:], ("3.14, zuvloop", "3.14" + ZUVLOOP)]


def _server(kind: str, suffix: str) -> str:
    version, _, loop = suffix.partition("-")
    return on_python(kind, version) + (f"-{loop}" if loop else "")


#: server name -> its kind (a column's app).
_KIND = {_server(kind, suffix): kind for _, suffix in _rows() for kind in KINDS}


def _servers() -> list[Server]:
    """Every row's servers, each serving only the routes of its columns."""
    servers = []
    for _, suffix in _rows():
        for kind in KINDS:
            routes = frozenset(route for _, k, route, _ in COLUMNS if k == kind)
            servers.append(replace(ALL[_server(kind, suffix)], routes=routes))
    return servers


#: (server, scenario) -> instructions per request, counted in the run's first round.
_COUNTED: dict[tuple[str, str], int] = {}
_COUNT = re.compile(r"([\d,]+) instructions/request")


def _instructions(route: str) -> Cell:
    """Instructions per request of the column's instructions.py scenario, counted by the
    server's own Python (and its environment: the zuvloop rows force the same loop)."""

    def run(target: Target) -> Metrics:
        server = target.server
        scenario = next(s for _, kind, r, s in COLUMNS if r == route and kind == _KIND[server.name])
        key = (server.name, scenario)
        if key in _COUNTED:
            return {"counted": "once, in the first round (callgrind counts are deterministic)"}
        assert isinstance(server, Veter) and server.python is not None
        command = [str(server.python), str(INSTRUCTIONS), scenario]
        out = subprocess.run(
            command, env={**os.environ, **server.env}, capture_output=True, text=True, check=False, timeout=900
        )
        found = _COUNT.search(out.stdout)
        if out.returncode != 0 or found is None:
            return {"error": (out.stderr or out.stdout).strip()[-300:]}
        _COUNTED[key] = int(found.group(1).replace(",", ""))
        env = " ".join(f"{k}={v}" for k, v in server.env.items())
        return {"instructions": _COUNTED[key], "command": f"{env} {' '.join(command)}".strip()}

    return Cell(f"{route} instructions", route, run, params={"route": route})


def _warm(target: Target) -> Metrics:
    """Warm the route the server is measured on (the typed server's is a POST)."""
    route = "order" if "order" in target.server.routes else "plaintext"
    body = BODY if route == "order" else None
    return wrk(target.url(route), 50, target.settings.warmup, body=body)


def _rate(settings: Settings) -> int:
    return 2000 if settings.quick else 5000


def plan(settings: Settings) -> Plan:
    routes = list(dict.fromkeys(route for _, _, route, _ in COLUMNS))
    cells = [cpu_per_request(r, _rate(settings), BODY if r == "order" else None) for r in routes]
    if not settings.quick:  # callgrind takes ~15 s a count: not for the smoke run
        cells = [_instructions(r) for r in routes] + cells
    return Plan(NAME, _servers(), cells, warmup=_warm)


def _cell(result: Result, route: str, kind: str) -> str | None:
    wanted = " instructions" if kind == "instructions" else " cpu @"
    return next((c["key"] for c in result["cells"] if c["route"] == route and wanted in c["key"]), None)


def _grid(result: Result, kind: str) -> dict[tuple[str, str], float | None]:
    metric = "instructions" if kind == "instructions" else "cpu_us_per_req"
    grid = {}
    for label, suffix in _rows():
        for heading, server_kind, route, _ in COLUMNS:
            cell = _cell(result, route, kind)
            grid[label, heading] = value(result, _server(server_kind, suffix), cell, metric) if cell else None
    return grid


def table(result: Result) -> str:
    headings = [heading for heading, *_ in COLUMNS]
    parts = []
    for kind, title, digits in (
        ("instructions", "Instructions per request (callgrind, in memory)", 0),
        ("cpu", f"CPU µs per request at {_rate_of(result)}/s (one worker, sockets included)", 1),
    ):
        grid = _grid(result, kind)
        if not any(v is not None for v in grid.values()):
            continue
        base = {h: grid["3.11", h] for h in headings}
        rows = []
        for label, _ in _rows():
            row = [label]
            for h in headings:
                got = grid[label, h]
                ratio = f" ({got / base[h]:.2f}x)" if got is not None and base[h] and label != "3.11" else ""
                row.append(num(got, digits) + ratio)
            rows.append(row)
        parts.append(
            f"{title}; in brackets, the ratio to 3.11 (lower is better):\n\n" + md_table(["Python", *headings], rows)
        )
    return "\n\n".join(parts)


def _rate_of(result: Result) -> int | str:
    return next((c["rate"] for c in result["cells"] if "rate" in c), "?")


def chart(result: Result, path: Path) -> None:
    rows = [label for label, _ in _rows()]
    headings = [heading for heading, *_ in COLUMNS]
    panels = [
        (_grid(result, "instructions"), "instructions per request (callgrind)"),
        (_grid(result, "cpu"), f"CPU µs per request at {_rate_of(result)}/s"),
    ]
    grouped_panels(rows, headings, panels, path, result["title"])
