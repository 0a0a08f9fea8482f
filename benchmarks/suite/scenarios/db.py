"""Field notes 4: nginx -> app -> PostgreSQL through a pool, one random row as JSON."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import nginx, paths, procs
from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result, md_table, num, value
from ..servers import Server, Veter
from ..services import postgres
from ..variants import KINDS, extra_pythonpath
from .cells import closed_clients

NAME = "db"
TITLE = "db: nginx -> app -> PostgreSQL, one random row of 10,000 as JSON"
METHOD = """
nginx (1 worker, upstream keep-alive) proxies to the app; the app reads one row of a
10,000-row table by a random id through a pool (asyncpg pool of 10 per process for
the async servers; one psycopg connection per sync worker) and returns it as JSON.
PostgreSQL (fsync off, data under benchmarks/.work) runs on loopback. nginx, the app
and PostgreSQL all share CPU 0; oha (closed loop, 100 connections) runs on CPU 1, so
this is a far smaller box than the field's 4-vCPU app server plus separate load
machine. Each server tries 1, 2, 3 and 5 workers (quick mode: 1 and 2); the table
names the count with the highest throughput.
"""

WORKERS = [1, 2, 3, 5]
QUICK_WORKERS = [1, 2]
MODULES = {
    "veter": "db_veter:app",
    "uvicorn-starlette": "db_starlette:app",
    "aiohttp": "db_aiohttp:app",
    "sanic": "db_sanic:app",
    "gunicorn-falcon": "db_falcon:app",
}
CELL = "db x100 clients"


@contextmanager
def services() -> Iterator[dict[str, str]]:
    with postgres() as dsn:
        yield {"DATABASE_URL": dsn}


def _server(kind: str, workers: int) -> Server:
    what, build, _ = KINDS[kind]
    module = MODULES[kind]

    def argv(port: int, _: int) -> list[str]:
        app_port = procs.free_port()
        return [*nginx.front(port, app_port), *build(module, app_port, workers)]

    cls = Veter if kind == "veter" else Server
    env = {"PYTHONPATH": extra_pythonpath()} if kind == "veter" else {}
    needs = (paths.PEERS_BIN / "python", paths.PEERS_BIN / "gunicorn")
    return cls(f"{kind} w={workers}", what, frozenset({"plaintext", "db"}), argv, env=env, needs=needs)


def plan(settings: Settings) -> Plan:
    counts = QUICK_WORKERS if settings.quick else WORKERS
    servers = []
    for kind, (_, _, allowed) in KINDS.items():
        servers += [_server(kind, w) for w in counts if allowed is None or w in allowed]
    return Plan(NAME, servers, [closed_clients("db", 100)])


def table(result: Result) -> str:
    rows = []
    for kind in KINDS:
        tried = [n for n in result["servers"] if n.startswith(f"{kind} w=")]
        measured = [n for n in tried if value(result, n, CELL, "achieved_rps")]
        if not measured:
            rows.append([kind, "–", "–", "–", "–", "not measured"])
            continue
        best = max(measured, key=lambda n: value(result, n, CELL, "achieved_rps") or 0.0)
        per_count = ", ".join(f"{n.split('=')[1]}: {num(value(result, n, CELL, 'achieved_rps'))}" for n in measured)
        rows.append(
            [
                f"**{kind}**" if kind == "veter" else kind,
                best.split("=")[1],
                num(value(result, best, CELL, "achieved_rps")),
                num(value(result, best, CELL, "p50_ms"), 1),
                num(value(result, best, CELL, "p99_ms"), 1),
                per_count,
            ]
        )
    header = ["server", "best workers", "req/s", "p50 ms", "p99 ms", "req/s by workers"]
    return md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, [CELL], "achieved_rps", path, "requests/s (closed loop, 100 connections)")
