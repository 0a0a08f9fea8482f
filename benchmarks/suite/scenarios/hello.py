"""Field notes 2 and 5: hello world, plaintext and JSON, plain and pipelined, every peer."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result, md_table, measured_servers, num, value
from ..servers import ALL
from .cells import throughput

NAME = "hello"
TITLE = "Hello world: plaintext and JSON, every peer"
METHOD = """
Every server gets one CPU (pinned to CPU 0, one process or worker unless its model
needs more: nginx 1 worker, gunicorn (2 x 1 CPU) + 1 = 3 sync workers, Go with
GOMAXPROCS=1 from the affinity mask); wrk, one thread, on CPU 1. Closed loop:
c=100 not pipelined and c=256 with 16 requests per write. Access logs off everywhere.
Above ~150-300k req/s one wrk thread is the limit, so the top of the non-pipelined
column measures wrk; the engine page has CPU-per-request numbers for that case.
Sync gunicorn workers do not keep connections alive, so they pay a TCP handshake per
request and cannot pipeline; that is their production model, not a mistake here.
"""

CELLS = ["plaintext c=100", "json c=100", "plaintext c=256 pipelined x16", "json c=256 pipelined x16"]


def plan(settings: Settings) -> Plan:
    cells = [
        throughput("plaintext", 100),
        throughput("json", 100),
        throughput("plaintext", 256, 16),
        throughput("json", 256, 16),
    ]
    return Plan(NAME, list(ALL.values()), cells)


def table(result: Result) -> str:
    servers = sorted(measured_servers(result), key=lambda s: -(value(result, s, CELLS[0], "rps") or 0))
    veter = value(result, "veter", CELLS[0], "rps")
    header = ["server", *[f"{c}" for c in CELLS], "errors", "plaintext vs veter"]
    rows = []
    for server in servers:
        errors = sum(int(value(result, server, c, "errors") or 0) for c in CELLS)
        mine = value(result, server, CELLS[0], "rps")
        ratio = num(mine / veter, 2, "x") if mine and veter else "–"
        name = f"**{server}**" if server == "veter" else server
        rows.append([name, *[num(value(result, server, c, "rps")) for c in CELLS], str(errors), ratio])
    return "Requests/s, median of runs (higher is better).\n\n" + md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, CELLS, "rps", path, "requests/s (closed loop, wrk; log scale)", log=True)
