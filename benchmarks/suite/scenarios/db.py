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
from ..variants import HOSTED_KINDS, KINDS, extra_pythonpath
from .cells import closed_clients, open_loop

NAME = "db"
TITLE = "db: nginx -> app -> PostgreSQL, one random row of 10,000 as JSON"
METHOD = """
nginx (1 worker, upstream keep-alive) proxies to the app; the app reads one row of a
10,000-row table by a random id through a pool (asyncpg pool of 10 per process for
the async servers, used directly by the peers' apps and through veter's own
`veter.pools.PostgresPool`, which lends first come first served, by veter's; one
psycopg connection per sync worker) and returns it as JSON.
PostgreSQL (fsync off, data under benchmarks/.work) runs on loopback. nginx, the app
and PostgreSQL all share CPU 0; oha (closed loop, 100 connections) runs on CPU 1, so
this is a far smaller box than the field's 4-vCPU app server plus separate load
machine; a second cell offers a fixed 1,500 requests/s (oha open loop, latency
corrected). Each server tries 1, 2, 3 and 5 workers (the hosted apps 1, 2 and 3;
quick mode: 1 and 2); the table names the count with the highest throughput.

Hosted apps (issue 14): the same Flask app (`apps/db_flask.py`, sync views, one
psycopg connection per thread) on veter's WSGI pool, gunicorn sync and gthread
workers, uWSGI, Granian's WSGI interface and uvicorn's (`--interface wsgi`), 10
threads per process where the server has threads; and the same FastAPI app (`apps/db_fastapi.py`, asyncpg pool of
10) on veter and on uvicorn.
"""

WORKERS = [1, 2, 3, 5]
QUICK_WORKERS = [1, 2]
MODULES = {
    "veter": "db_veter:app",
    "uvicorn-starlette": "db_starlette:app",
    "aiohttp": "db_aiohttp:app",
    "sanic": "db_sanic:app",
    "gunicorn-falcon": "db_falcon:app",
    "veter-flask": "db_flask:app",
    "gunicorn-flask-sync": "db_flask:app",
    "gunicorn-flask-gthread": "db_flask:app",
    "uwsgi-flask": "db_flask:app",
    "granian-flask": "db_flask:app",
    "uvicorn-flask": "db_flask:app",
    "veter-fastapi": "db_fastapi:app",
    "uvicorn-fastapi": "db_fastapi:app",
}
ALL_KINDS = {**KINDS, **HOSTED_KINDS}
CELL = "db x100 clients"
#: A fixed rate most servers sustain here: their latency side by side (issue 14 asks
#: for req/s and p99 at fixed rates).
RATE = 1500
RATE_CELL = f"db @{RATE}/s"


@contextmanager
def services() -> Iterator[dict[str, str]]:
    with postgres() as dsn:
        yield {"DATABASE_URL": dsn}


def _server(kind: str, workers: int) -> Server:
    what, build, _ = ALL_KINDS[kind]
    module = MODULES[kind]

    def argv(port: int, _: int) -> list[str]:
        app_port = procs.free_port()
        return [*nginx.front(port, app_port), *build(module, app_port, workers)]

    ours = kind.startswith("veter")
    cls = Veter if ours else Server
    env = {"PYTHONPATH": extra_pythonpath()} if ours else {}
    needs = (paths.PEERS_BIN / "python", paths.PEERS_BIN / "gunicorn")
    return cls(f"{kind} w={workers}", what, frozenset({"plaintext", "db"}), argv, env=env, needs=needs)


def plan(settings: Settings) -> Plan:
    counts = QUICK_WORKERS if settings.quick else WORKERS
    servers = []
    for kind, (_, _, allowed) in ALL_KINDS.items():
        servers += [_server(kind, w) for w in counts if allowed is None or w in allowed]
    return Plan(NAME, servers, [closed_clients("db", 100), open_loop("db", RATE, 256)])


def table(result: Result) -> str:
    rows = []
    for kind in ALL_KINDS:
        tried = [n for n in result["servers"] if n.startswith(f"{kind} w=")]
        measured = [n for n in tried if value(result, n, CELL, "achieved_rps")]
        if not measured:
            rows.append([kind, "–", "–", "–", "–", "not measured", "–"])
            continue
        best = max(measured, key=lambda n: value(result, n, CELL, "achieved_rps") or 0.0)
        per_count = ", ".join(f"{n.split('=')[1]}: {num(value(result, n, CELL, 'achieved_rps'))}" for n in measured)
        rows.append(
            [
                f"**{kind}**" if kind.startswith("veter") else kind,
                best.split("=")[1],
                num(value(result, best, CELL, "achieved_rps")),
                num(value(result, best, CELL, "p50_ms"), 1),
                num(value(result, best, CELL, "p99_ms"), 1),
                per_count,
                _at_rate(result, best),
            ]
        )
    header = [
        "server",
        "best workers",
        "req/s",
        "p50 ms",
        "p99 ms",
        "req/s by workers",
        f"at {RATE}/s (best workers): req/s, p50 / p99 ms, ok",
    ]
    return md_table(header, rows)


def _at_rate(result: Result, server: str) -> str:
    rps = value(result, server, RATE_CELL, "achieved_rps")
    if rps is None:
        return "–"
    p50, p99 = value(result, server, RATE_CELL, "p50_ms"), value(result, server, RATE_CELL, "p99_ms")
    ok = value(result, server, RATE_CELL, "success") or 0
    return f"{num(rps)}, {num(p50, 1)} / {num(p99, 1)}, {num(ok * 100, 1)}%"


def chart(result: Result, path: Path) -> None:
    bars(result, [CELL], "achieved_rps", path, "requests/s (closed loop, 100 connections)")
