"""Field notes 1: a handler that calls a service, then two more concurrently, then
writes to PostgreSQL (examples/fanout), against aiohttp and FastAPI + httpx."""

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import paths, procs
from ..charts import latency_curves
from ..measure import Plan, Settings
from ..report import Result
from ..servers import Server, Veter
from ..services import ServiceError, postgres
from ..variants import KINDS, extra_pythonpath, gunicorn_aiohttp, uvicorn
from . import ladder
from .cells import open_loop

NAME = "fanout"
TITLE = "fanout: one backend call, two concurrent calls, one PostgreSQL write"
METHOD = """
`GET /fanout/7` (examples/fanout): the app asks a backend service for a user, then
for recommendations and ads concurrently, inserts a row into PostgreSQL, and answers
with all of it as JSON. The backend is veter serving examples/fanout/backend.py
(2 ms of awaited work per call), the same for every server; PostgreSQL has fsync off.
The app, the backend and PostgreSQL share CPU 0; oha offers fixed rates from CPU 1
(open loop, `-q RATE --latency-correction`, connections for twice the expected
latency), and a server stops climbing once p99 passes 1 s or success falls under
99%. The warm-up runs wrk on the fanout route itself, so every app has opened its
pools first. Each app keeps up to 50 keep-alive connections to the backend and 10
database connections; one process each. veter uses veter.client (aiohttp's client
underneath) and veter.pools; the aiohttp app uses aiohttp's client and asyncpg; the
FastAPI app httpx's AsyncClient and asyncpg.
"""

RATES = [250, 500, 1000, 2000]
QUICK_RATES = [250, 1000]
EXPECTED_S = 0.02
SCHEMA = """
CREATE TABLE IF NOT EXISTS fanout_views (
    id bigserial PRIMARY KEY, user_id integer NOT NULL, recommendations integer[] NOT NULL,
    ads text[] NOT NULL, at timestamptz NOT NULL DEFAULT now()
);
TRUNCATE fanout_views;
"""


@contextmanager
def services() -> Iterator[dict[str, str]]:
    with postgres() as dsn:
        psql = [str(_psql()), dsn, "-q", "-v", "ON_ERROR_STOP=1", "-c", SCHEMA]
        done = subprocess.run(psql, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ServiceError(f"fanout schema: {done.stderr.strip()[-400:]}")
        port = procs.free_port()
        argv = [*paths.veter_run("examples.fanout.backend:app")]
        argv += ["--host", "127.0.0.1", "--port", str(port)]
        log = paths.WORK / "logs" / NAME / "backend.log"
        try:
            backend = procs.start(argv, port, "/", log, paths.REPO, {})
        except procs.StartError as exc:
            raise ServiceError(f"fanout backend: {exc}") from exc
        try:
            yield {"DATABASE_URL": dsn, "BACKEND_URL": f"http://127.0.0.1:{port}"}
        finally:
            backend.stop()


def _psql() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"), key=lambda p: int(p.parts[4]))
    if not found:
        raise ServiceError("PostgreSQL is not installed (apt-get install postgresql)")
    return found[-1]


def _servers() -> list[Server]:
    routes = frozenset({"plaintext", "fanout"})
    veter_build = KINDS["veter"][1]
    needs = (paths.PEERS_BIN / "python",)
    return [
        Veter(
            "veter",
            "veter: veter.client + veter.pools (examples/fanout)",
            routes,
            lambda port, _: veter_build("examples.fanout.app:app", port, 1),
            cwd=paths.REPO,
            env={"PYTHONPATH": f"{paths.REPO}:{extra_pythonpath()}"},
        ),
        Server(
            "aiohttp",
            "aiohttp on gunicorn (uvloop worker): aiohttp client + asyncpg",
            routes,
            lambda port, _: gunicorn_aiohttp("fanout_aiohttp:app", port, 1),
            needs=needs,
        ),
        Server(
            "fastapi-httpx",
            "FastAPI on uvicorn: httpx AsyncClient + asyncpg",
            routes,
            lambda port, _: uvicorn("fanout_fastapi:app", port, 1),
            needs=needs,
        ),
    ]


def plan(settings: Settings) -> Plan:
    cells = []
    for rate in QUICK_RATES if settings.quick else RATES:
        connections = min(4096, max(64, int(rate * EXPECTED_S * 2)))
        cells.append(open_loop("fanout", rate, connections, ladder="fanout"))
    # Warm up on the fanout route itself, so every app has opened its backend and
    # database connections before the first measured cell.
    return Plan(NAME, _servers(), cells, warmup_route="fanout")


def table(result: Result) -> str:
    return ladder.table(result)


def chart(result: Result, path: Path) -> None:
    latency_curves(result, path)
