"""Typed handlers: a validated JSON body echoed and typed query parameters, on veter,
FastAPI, Litestar and BlackSheep (issue 15)."""

from pathlib import Path

from ..charts import bars
from ..loadgen import Metrics, oha, wrk
from ..measure import Cell, Plan, Settings, Target
from ..paths import REPO
from ..report import Result, md_table, num, value
from ..servers import pick

NAME = "typed"
TITLE = "Typed handlers: validated JSON bodies and query parameters, veter vs FastAPI, Litestar, BlackSheep"
METHOD = """
The same two endpoints on each framework (`apps/typed_*.py`): `POST /order` takes a
JSON body of 10 fields (a nested object, a list of strings, an optional, a
constrained int), validates it into the framework's model (veter and Litestar: a
msgspec Struct; FastAPI and BlackSheep: a pydantic v2 model) and answers it as JSON;
`GET /items?limit=20&offset=40&q=shoes` takes three typed query parameters (one
constrained; BlackSheep's `FromQuery` has no constraints) and answers them as JSON.
veter also serves both untyped, as plain `def` handlers: `/order-raw` parses the
body (`request.body().value`) with orjson and answers `orjson.dumps` of it,
`/items-raw` reads the query by hand. One process each, pinned to CPU 0; uvicorn (httptools, uvloop) for the
peers. wrk (one thread, c=100, closed loop; POSTs by the suite's Lua script) pinned
to CPU 1; CPU per request from oha at a fixed open-loop rate (server CPU time from
/proc divided by the 2xx answers). Servers interleaved per run, medians.
"""

BODY = REPO / "benchmarks" / "apps" / "order.json"
SERVERS = ["veter-typed", "fastapi-typed", "litestar-typed", "blacksheep-typed"]
PEERS = ["fastapi-typed", "litestar-typed", "blacksheep-typed"]


def _body(route: str) -> Path | None:
    return BODY if route.startswith("order") else None


def _throughput(route: str) -> Cell:
    def run(target: Target) -> Metrics:
        return wrk(target.url(route), 100, target.settings.seconds, body=_body(route))

    return Cell(f"{route} c=100", route, run, params={"route": route, "c": 100})


def _cpu(route: str, rate: int) -> Cell:
    def run(target: Target) -> Metrics:
        before = target.running.cpu_seconds()
        metrics = oha(target.url(route), rate, target.settings.latency_seconds, 64, body=_body(route))
        used = target.running.cpu_seconds() - before
        served = metrics.get("ok", 0)
        metrics["cpu_s"] = used
        metrics["cpu_us_per_req"] = used / served * 1e6 if served else None
        return metrics

    return Cell(f"{route} cpu @{rate}/s", route, run, params={"route": route, "rate": rate})


ROUTES = ["order", "order-raw", "items", "items-raw"]


def _rate(settings: Settings) -> int:
    return 2000 if settings.quick else 4000


def plan(settings: Settings) -> Plan:
    cells = [_throughput(r) for r in ROUTES] + [_cpu(r, _rate(settings)) for r in ROUTES]
    return Plan(NAME, pick(SERVERS), cells, ready_route="items")


def _keys(result: Result, kind: str) -> dict[str, str]:
    """route -> cell key, of the throughput (`c=100`) or CPU (`cpu @`) cells."""
    found = {}
    for cell in result["cells"]:
        key = cell["key"]
        route = key.split()[0]
        if (kind == "cpu") == (" cpu @" in key):
            found[route] = key
    return found


def table(result: Result) -> str:
    rps, cpu = _keys(result, "rps"), _keys(result, "cpu")
    header = [
        "server",
        *[f"{rps[r]} req/s" for r in ROUTES if r in rps],
        *[f"{cpu[r]} µs/req" for r in ROUTES if r in cpu],
    ]
    rows = []
    for server in SERVERS:
        row = [server]
        row += [num(value(result, server, rps[r], "rps")) for r in ROUTES if r in rps]
        row += [num(value(result, server, cpu[r], "cpu_us_per_req"), 1) for r in ROUTES if r in cpu]
        rows.append(row)
    return md_table(header, rows) + "\n\n" + _targets(result, rps, cpu)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _targets(result: Result, rps: dict[str, str], cpu: dict[str, str]) -> str:
    lines = ["Targets from issue 15 (throughput ratio; CPU per request ratio in brackets):", ""]
    for peer, need in (("fastapi-typed", 3.0), ("litestar-typed", 1.3), ("blacksheep-typed", 1.3)):
        through = _ratio(
            value(result, "veter-typed", rps.get("order", ""), "rps"), value(result, peer, rps.get("order", ""), "rps")
        )
        cost = _ratio(
            value(result, peer, cpu.get("order", ""), "cpu_us_per_req"),
            value(result, "veter-typed", cpu.get("order", ""), "cpu_us_per_req"),
        )
        if through is None:
            lines.append(f"- typed POST >= {need}x {peer}: not measured")
            continue
        bracket = f" [CPU {cost:.2f}x]" if cost else ""
        lines.append(
            f"- typed POST >= {need}x {peer}: {through:.2f}x{bracket}, {'met' if through >= need else 'NOT met'}"
        )
    for typed, raw, limit, text in (
        ("order", "order-raw", 1.25, "typed POST costs <= 25% more CPU than the orjson handler"),
        ("items", "items-raw", 1.10, "typed GET within 10% of the untyped handler (CPU)"),
    ):
        extra = _ratio(
            value(result, "veter-typed", cpu.get(typed, ""), "cpu_us_per_req"),
            value(result, "veter-typed", cpu.get(raw, ""), "cpu_us_per_req"),
        )
        if extra is None:
            lines.append(f"- {text}: not measured")
            continue
        lines.append(f"- {text}: {extra:.2f}x, {'met' if extra <= limit else 'NOT met'}")
    return "\n".join(lines)


def chart(result: Result, path: Path) -> None:
    cells = [k for k in (_keys(result, "rps").get(r) for r in ROUTES) if k]
    bars(result, cells, "rps", path, "requests/s (closed loop, wrk)")
