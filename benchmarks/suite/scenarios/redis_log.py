"""Field notes 5: one Redis SET and one log line per request, one and several workers,
and a count of the log lines afterwards (lost lines)."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from ..charts import bars
from ..loadgen import Metrics
from ..measure import AFTER_KEY, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import Server, Veter
from ..services import redis
from ..variants import KINDS, extra_pythonpath
from .cells import closed_clients

NAME = "redis+log"
TITLE = "redis+log: one Redis SET and one log line per request"
METHOD = """
Each request does one Redis SET (redis-py asyncio client with hiredis, pool of 20
per process) and writes one line through a plain `logging.FileHandler` shared by all
worker processes of the server (the ordinary handler the field used; it does not
lock across processes). oha runs a closed loop of 64 connections. After the server
stops, the lines in its log file are counted against the 2xx answers oha received:
a shortfall is lost log lines. One worker and 3 workers, all on CPU 0 with Redis.
veter's line is its own access log line (`--access-log FILE`: formatted in Rust, one
O_APPEND write per loop iteration per worker, with the request id), the way a veter
service logs requests.
"""

WORKERS = [1, 3]
MODULES = {
    "veter": "redis_veter:app",
    "sanic": "redis_sanic:app",
    "aiohttp": "redis_aiohttp:app",
    "uvicorn-starlette": "redis_starlette:app",
}
CELL = "redis x64 clients"


@contextmanager
def services() -> Iterator[dict[str, str]]:
    with redis() as url:
        yield {"REDIS_URL": url}


def _log_file(name: str) -> Path:
    return paths.WORK / "logs" / NAME / f"{name.replace(' ', '_').replace('=', '')}.access.log"


def _server(kind: str, workers: int) -> Server:
    what, build, _ = KINDS[kind]
    name = f"{kind} w={workers}"
    log = _log_file(name)

    def argv(port: int, _: int) -> list[str]:
        command = build(MODULES[kind], port, workers)
        if kind == "veter":
            command += ["--access-log", str(log)]  # overrides the suite's --access-log off
        return command

    def prepare(run_dir: Path, port: int, _: int) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")

    env = {"LOG_FILE": str(log)}
    if kind == "veter":
        env["PYTHONPATH"] = extra_pythonpath()
    cls = Veter if kind == "veter" else Server
    return cls(
        name,
        what,
        frozenset({"plaintext", "redis"}),
        argv,
        env=env,
        needs=(paths.PEERS_BIN / "gunicorn",),
        prepare=prepare,
    )


def count_lines(target: Target, measured: list[Metrics]) -> Metrics:
    log = _log_file(target.server.name)
    lines = sum(1 for line in log.read_text(errors="replace").splitlines() if "GET /redis" in line)
    answered = sum(int(m.get("ok", 0)) for m in measured)
    return {"log_lines": lines, "answered": answered, "lost_lines": max(0, answered - lines)}


def plan(settings: Settings) -> Plan:
    servers = []
    for kind in MODULES:
        allowed = KINDS[kind][2]
        servers += [_server(kind, w) for w in WORKERS if allowed is None or w in allowed]
    return Plan(NAME, servers, [closed_clients("redis", 64)], after=count_lines)


def table(result: Result) -> str:
    rows = []
    for server in measured_servers(result):
        rows.append(
            [
                f"**{server}**" if server.startswith("veter") else server,
                num(value(result, server, CELL, "achieved_rps")),
                num(value(result, server, CELL, "p50_ms"), 1),
                num(value(result, server, CELL, "p99_ms"), 1),
                num(value(result, server, AFTER_KEY, "answered")),
                num(value(result, server, AFTER_KEY, "log_lines")),
                num(value(result, server, AFTER_KEY, "lost_lines")),
            ]
        )
    header = ["server", "req/s", "p50 ms", "p99 ms", "answered", "log lines", "lost lines"]
    return "Medians of runs.\n\n" + md_table(header, rows)


def chart(result: Result, path: Path) -> None:
    bars(result, [CELL], "achieved_rps", path, "requests/s (closed loop, 64 connections)")
