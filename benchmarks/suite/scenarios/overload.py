"""Issue 4 / field notes 4: an open loop at twice a worker's capacity for a handler
doing 5 ms of CPU work; veter with shedding on, against servers without it."""

from pathlib import Path

from .. import paths
from ..charts import bars
from ..loadgen import Metrics, oha_by_status, wrk
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import ALL, Argv, Server, Veter

NAME = "overload"
TITLE = "overload: twice the capacity, 5 ms of CPU per request"
METHOD = """
`GET /cpu5` burns 5 ms of CPU on the event loop (a `def` handler in veter, `async def`
in the others), so one worker serves at most ~200 requests/s. Each server is one
process pinned to CPU 0. Cells: an unloaded open loop at 50/s, an open loop at 400/s
(2x the nominal capacity) with 256 connections, which oha opens as it needs them (a connection storm, as when
clients time out and reconnect). Latency is coordinated-omission corrected (oha
`-q RATE --latency-correction`) and split by answer from oha's per-request rows
(`--db-url`): *served* = 2xx, *shed* = 503. veter runs with `--queue-timeout 0.005`
(a request that already waited, or would wait behind the work queued ahead of it, one
handler's time is answered 503 + Retry-After);
`veter (no shedding)` is the same server without it. uvicorn and aiohttp have no
overload control: every request is served, however late. Last, the capacity: 2xx
answers per second in a closed loop (wrk, 16 connections). The last column leaves out
the first second of the overload cell, while oha is still opening connections.
"""

UNLOADED = 50
OVERLOAD = 400
CONNECTIONS = 256
QUEUE_TIMEOUT = "0.005"


def _veter(extra: list[str]) -> Argv:
    def argv(port: int, workers: int) -> list[str]:
        base = [*paths.veter_run("benchmarks.apps.veter_app:app")]
        return [*base, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), *extra]

    return argv


def _servers() -> list[Server]:
    routes = frozenset({"plaintext", "cpu5"})
    return [
        Veter(
            "veter",
            f"veter, --queue-timeout {QUEUE_TIMEOUT}",
            routes,
            _veter(["--queue-timeout", QUEUE_TIMEOUT]),
            cwd=paths.REPO,
        ),
        Veter("veter (no shedding)", "veter, overload control off (defaults)", routes, _veter([]), cwd=paths.REPO),
        Server("uvicorn-raw", ALL["uvicorn-raw"].what, routes, ALL["uvicorn-raw"].argv, needs=ALL["uvicorn-raw"].needs),
        Server("aiohttp", ALL["aiohttp"].what, routes, ALL["aiohttp"].argv, needs=ALL["aiohttp"].needs),
    ]


def _split(rate: int, connections: int) -> Cell:
    def run(target: Target) -> Metrics:
        db = str(paths.WORK / "run" / NAME / f"{target.server.name.replace(' ', '_').strip('()')}-{rate}.db")
        return oha_by_status(target.url("cpu5"), rate, target.settings.latency_seconds, connections, db)

    return Cell(f"cpu5 @{rate}/s", "cpu5", run, params={"rate": rate, "c": connections})


def _capacity() -> Cell:
    """Closed loop on /cpu5: 2xx answers per second (a shedding server also answers 503s)."""

    def run(target: Target) -> Metrics:
        metrics = wrk(target.url("cpu5"), 16, target.settings.seconds)
        if "error" not in metrics:
            metrics["ok_rps"] = metrics["rps"] * (1 - metrics["non_2xx"] / max(1, metrics["requests"]))
        return metrics

    return Cell("cpu5 capacity", "cpu5", run, params={"c": 16})


def plan(settings: Settings) -> Plan:
    cells = [_split(UNLOADED, 16), _split(OVERLOAD, CONNECTIONS), _capacity()]
    return Plan(NAME, _servers(), cells)


def table(result: Result) -> str:
    unloaded, loaded, capacity = (c["key"] for c in result["cells"])
    header = [
        "server",
        "capacity",
        f"{UNLOADED}/s p50 / p99",
        f"{OVERLOAD}/s served: req/s, p50 / p99",
        "served p99 ÷ unloaded p99",
        "shed: share, p50 / p99",
        "after the first second: served p99 ÷ unloaded p99, shed p50 / p99",
    ]
    rows = []
    for server in measured_servers(result):
        base_p99 = value(result, server, unloaded, "served_p99_ms")
        p99 = value(result, server, loaded, "served_p99_ms")
        shed = value(result, server, loaded, "shed") or 0
        shed_text = "none"
        if shed:
            shed_lat = [value(result, server, loaded, m) for m in ("shed_p50_ms", "shed_p99_ms")]
            share = value(result, server, loaded, "shed_share") or 0
            shed_text = f"{num(share * 100, 0)}%, " + " / ".join(num(x, 1) for x in shed_lat) + " ms"
        lat = [value(result, server, unloaded, m) for m in ("served_p50_ms", "served_p99_ms")]
        served = [value(result, server, loaded, m) for m in ("served_p50_ms", "served_p99_ms")]
        served_rps = num(value(result, server, loaded, "served_rps"), 0)
        rows.append(
            [
                f"**{server}**" if server == "veter" else server,
                num(value(result, server, capacity, "ok_rps"), 0, " req/s"),
                " / ".join(num(x, 1) for x in lat) + " ms",
                f"{served_rps}, " + " / ".join(num(x, 1) for x in served) + " ms",
                num(p99 / base_p99, 1, "x") if p99 and base_p99 else "–",
                shed_text,
                _steady(result, server, loaded, base_p99),
            ]
        )
    note = (
        "Latency in ms, coordinated-omission corrected, medians of runs; served = 2xx, shed = 503. "
        "The target (issue 4): with overload control on, the served p99 stays within 3x the "
        "unloaded p99 and shed requests are answered in under 5 ms."
    )
    return note + "\n\n" + md_table(header, rows)


def _steady(result: Result, server: str, loaded: str, base_p99: float | None) -> str:
    p99 = value(result, server, loaded, "served_after1s_p99_ms")
    ratio = num(p99 / base_p99, 1, "x") if p99 and base_p99 else "–"
    shed = [value(result, server, loaded, m) for m in ("shed_after1s_p50_ms", "shed_after1s_p99_ms")]
    if shed[0] is None:
        return f"{ratio}, none shed"
    return f"{ratio}, " + " / ".join(num(x, 1) for x in shed) + " ms"


def chart(result: Result, path: Path) -> None:
    keys = [c["key"] for c in result["cells"]][:2]
    bars(result, keys, "served_p99_ms", path, "p99 of served requests, ms (log scale)", log=True)
