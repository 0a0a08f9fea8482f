"""HTTP/2 over cleartext (h2c, prior knowledge): veter against Granian, uvicorn (zttp),
Hypercorn and nginx, 100 connections of 16 streams each.

uvicorn's HTTP/2 (`--http zttp --http2`) serves at most 4,096 streams on one connection:
zttp caps the streams a peer may ever open on a connection (`Limits.max_streams = 4096`
in its src/core/h2/connection.zig, checked in `openPeerStream`; a guard against Rapid
Reset, CVE-2023-44487) and answers the 4,097th with GOAWAY ENHANCE_YOUR_CALM, which
uvicorn logs as "HTTP/2 flood detected (enhance your calm)". The cap is a count, not a
rate: one request at a time trips it as surely as 16. Neither zttp (its HTTP/2
`Connection` takes no limits) nor uvicorn (no flag) can change it. h2load neither retries
the refused streams nor reconnects, so each connection ends with its 16 in-flight streams
errored and stays closed for the rest of the run; a closed-loop cell of uvicorn's fails
once its connections have carried 4,096 requests each (100 x 4,096 = 409,600 in all) in
its warm-up plus window.

A real client meets the cap too and opens a new connection (a browser, Envoy, nginx's
upstream keepalive); h2load cannot. So a closed-loop cell's window is cut into parts of
at most `PART_SECONDS`, each an h2load run of its own on 100 new connections with its
own warm-up: a connection carries at most (1 + 2) s of requests, under the cap up to
~136,000 req/s, and every server is measured the same way (nginx's own per-connection
cap, `keepalive_requests`, is a setting, raised for it in nginx.py). A server that
ends connections sooner than that still fails its cell.
"""

import math
from pathlib import Path
from typing import Any

from .. import h2c, paths
from ..charts import bars
from ..loadgen import Metrics, h2load
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, num, value
from ..servers import pick

NAME = "http2"
TITLE = "HTTP/2 (h2c): veter vs Granian, uvicorn, Hypercorn and nginx, 100 connections x 16 streams"
METHOD = """
Every server answers HTTP/2 over cleartext by prior knowledge on its one port, one
process pinned to CPU 0, access logs off: veter (`veter run`, its own `def` handlers in
`apps/veter_app.py`, and hosting the raw ASGI app `apps/asgi_raw.py`), Granian
`--http auto` (the raw RSGI app `apps/granian_rsgi.py`, and the raw ASGI app), uvicorn
0.54 `--http zttp --http2` on uvloop (the raw ASGI app), Hypercorn on uvloop (the raw
ASGI app) and nginx (`listen ... http2`, `return 200`) as the ceiling. The load
generator is h2load (nghttp2), one thread pinned to CPU 1, closed loop: 100
connections, up to 16 concurrent streams on each, 1 s of load before the measured
window, the window cut into parts of at most 2 s, each a run of its own on new
connections after its own 1 s of load. Cells: GET plaintext, GET JSON (serialised per request), and POST `/upload` of
a 16 KiB body that the server reads whole and answers with its length (nginx reads it
through `mirror`: with `return` alone it answers unread and stalls on HTTP/2 flow
control). A cell fails, and shows no rate, if h2load negotiated anything but h2c or saw
any request fail (non-2xx, stream or connection error, timeout) in any run. CPU per
request: h2load at a fixed rate (100 connections, `--rps` each, no warm-up; 2,000/s for
every route, and 20,000/s for the GET routes), server CPU
time (the run time of its process group's threads, /proc/<pid>/task/*/schedstat) over the run divided by the 2xx
answers; it is the number to trust where h2load, not the server, is the limit (its own
CPU share is in the table). Servers interleaved per run, medians. The parts are there
because uvicorn+zttp answers at most 4,096 streams on a connection, then ends it with GOAWAY
ENHANCE_YOUR_CALM (zttp's fixed `max_streams`, no option), and h2load does not reconnect as
a real client does: with one 1 s warm-up and a 5 s window on the same connections, its
cells failed above 68k req/s (the runs before parts); in parts a connection lives
3 s, under the cap up to ~136k req/s.
"""

CLIENTS, STREAMS = 100, 16
BODY_BYTES = 16 * 1024
CELL_WARMUP_S = 1.0
#: The longest window one h2load run measures: a closed-loop cell's window is cut into
#: parts no longer than this, each on new connections (see the module's docstring).
PART_SECONDS = 2.0
ROUTES = ["plaintext", "json", "upload"]
SERVERS = [
    "veter",
    "veter-asgi",
    "nginx-h2",
    "granian-rsgi-h2",
    "granian-asgi-h2",
    "uvicorn-zttp-h2",
    "hypercorn",
]
PAIRS = [
    ("veter", "nginx-h2"),
    ("veter", "granian-rsgi-h2"),
    ("veter", "uvicorn-zttp-h2"),
    ("veter", "hypercorn"),
    ("veter-asgi", "granian-asgi-h2"),
    ("veter-asgi", "uvicorn-zttp-h2"),
    ("veter-asgi", "hypercorn"),
]
#: A load generator busier than this may be the limit of the rate it reports.
LOADGEN_BUSY = 0.9
#: A CPU cell whose server answered less than this share of the offered rate says so.
SHORT_OF_RATE = 0.95


def _label(route: str) -> str:
    return "POST 16 KiB" if route == "upload" else route


def _key(route: str) -> str:
    return f"{_label(route)} c={CLIENTS} x{STREAMS}"


def _cpu_key(route: str, rate: int) -> str:
    return f"{_label(route)} cpu @{rate}/s"


def _body() -> Path:
    """The POST body, written once under .work (16 KiB of one repeated byte)."""
    body = paths.WORK / "run" / NAME / f"body-{BODY_BYTES}"
    if not body.exists() or body.stat().st_size != BODY_BYTES:
        body.parent.mkdir(parents=True, exist_ok=True)
        body.write_bytes(b"x" * BODY_BYTES)
    return body


def _load(
    target: Target, route: str, seconds: float, warmup: float, rps_per_client: int | None = None, parts: int = 1
) -> Metrics:
    body = _body() if route == "upload" else None
    url = target.url(route)
    return h2load(url, CLIENTS, STREAMS, seconds, warmup, body=body, rps_per_client=rps_per_client, parts=parts)


def _throughput(route: str) -> Cell:
    def run(target: Target) -> Metrics:
        seconds = target.settings.seconds
        return _load(target, route, seconds, CELL_WARMUP_S, parts=math.ceil(seconds / PART_SECONDS))

    params = {"route": route, "c": CLIENTS, "streams": STREAMS}
    return Cell(_key(route), route, run, params=params)


def _cpu(route: str, rate: int) -> Cell:
    """Server CPU per answer at `rate` requests/s. No warm-up, so that every request the
    CPU time pays for is counted (the server is warm from the cells before)."""

    def run(target: Target) -> Metrics:
        before = target.running.cpu_seconds()
        metrics = _load(target, route, target.settings.latency_seconds, 0.0, rps_per_client=rate // CLIENTS)
        used = target.running.cpu_seconds() - before
        metrics["cpu_s"] = used
        served = metrics.get("succeeded", 0) if "error" not in metrics else 0
        metrics["cpu_us_per_req"] = used / served * 1e6 if served else None
        return metrics

    return Cell(_cpu_key(route, rate), route, run, params={"route": route, "rate": rate, "c": CLIENTS})


def _warmup(target: Target) -> Metrics:
    return _load(target, "plaintext", target.settings.warmup, 0.0)


def _rate(settings: Settings) -> int:
    """Low enough for every peer to keep up (Hypercorn's ceiling is ~3,000/s here)."""
    return 1000 if settings.quick else 2000


#: The GET cells' second fixed rate: a tenth of nginx's closed-loop rate here, a loaded
#: server (at 2,000/s nearly every request is alone in its read, so the cost of a wakeup
#: is most of it). Hypercorn cannot reach it (its figure says the rate it reached);
#: uvicorn+zttp's connections stay under their 4,096 streams (2,000 each in 10 s).
LOADED_RATE = 20_000


def plan(settings: Settings) -> Plan:
    rate = _rate(settings)
    cells = [_throughput(r) for r in ROUTES] + [_cpu(r, rate) for r in ROUTES]
    if not settings.quick:
        cells += [_cpu(r, LOADED_RATE) for r in ROUTES if r != "upload"]
    return Plan(NAME, pick(SERVERS), cells, warmup=_warmup, ready_probe=h2c.status)


def _runs(result: Result, server: str, cell: str) -> list[Metrics]:
    return result["results"].get(server, {}).get(cell, {}).get("runs", [])


def _failure(result: Result, server: str, cell: str) -> str | None:
    """How many runs of the cell failed and the first one's error, or None."""
    runs = _runs(result, server, cell)
    failed = [run["error"] for run in runs if "error" in run]
    return f"{len(failed)} of {len(runs)} runs failed: {failed[0]}" if failed else None


def _figure(result: Result, server: str, cell: str, metric: str, digits: int) -> str:
    """The median, or "failed" when any run of the cell failed (never a rate of the rest)."""
    if _failure(result, server, cell):
        return "failed"
    return num(value(result, server, cell, metric), digits)


def _cpu_figure(result: Result, server: str, cell: dict[str, Any]) -> str:
    """CPU per request, and the rate reached when it fell short of the one offered."""
    figure = _figure(result, server, cell["key"], "cpu_us_per_req", 1)
    reached = value(result, server, cell["key"], "rps")
    if figure != "failed" and reached is not None and reached < SHORT_OF_RATE * cell["rate"]:
        figure += f" (at {num(reached)}/s)"
    return figure


def _ratio(result: Result, ours: str, theirs: str, cell: str, metric: str, invert: bool = False) -> str:
    if _failure(result, ours, cell) or _failure(result, theirs, cell):
        return "–"
    a, b = value(result, ours, cell, metric), value(result, theirs, cell, metric)
    if not a or not b:
        return "–"
    return num(b / a if invert else a / b, 2, "x")


def table(result: Result) -> str:
    cells = [c["key"] for c in result["cells"] if " cpu @" not in c["key"]]
    cpu_params = [c for c in result["cells"] if " cpu @" in c["key"]]
    cpu_cells = [c["key"] for c in cpu_params]
    header = ["server", *[f"{c} req/s" for c in cells], f"{cells[0]} p99 ms"]
    header += [f"{c} µs/req" for c in cpu_cells]
    rows, failures, busy = [], [], []
    for server in SERVERS:
        row = [f"**{server}**" if server == "veter" else server]
        row += [_figure(result, server, c, "rps", 0) for c in cells]
        row.append(_figure(result, server, cells[0], "latency_p99_ms", 1))
        row += [_cpu_figure(result, server, c) for c in cpu_params]
        rows.append(row)
        for cell in cells + cpu_cells:
            failed = _failure(result, server, cell)
            if failed:
                failures.append(f"- {server}, {cell}: {failed}")
        for cell in cells:
            share = value(result, server, cell, "loadgen_cpu_share")
            if share is not None and share > LOADGEN_BUSY and not _failure(result, server, cell):
                busy.append(f"{server} {cell} ({num(share * 100, 0)}%)")
    for ours, theirs in PAIRS:
        row = [f"{ours} ÷ {theirs}"]
        row += [_ratio(result, ours, theirs, c, "rps") for c in cells]
        row.append("–")
        # CPU: the peer's cost over ours, so that higher is better here too.
        row += [_ratio(result, ours, theirs, c, "cpu_us_per_req", invert=True) for c in cpu_cells]
        rows.append(row)
    note = (
        "Requests/s: 2xx answers in the measured window, medians of runs. Ratios: throughput "
        "veter ÷ peer; CPU columns of the ratio rows are the peer's µs/request ÷ veter's (both: "
        "higher is better). A cell any run of which failed shows no figure. A CPU figure taken "
        "where the server answered under 95% of the offered rate says the rate it reached."
    )
    parts = [note, md_table(header, rows)]
    if busy:
        parts.append(
            f"h2load's CPU was over {LOADGEN_BUSY:.0%} busy in: " + ", ".join(busy) + "; there the rate is "
            "its limit as much as the server's (see the CPU columns)."
        )
    if failures:
        parts.append("Failed cells:\n\n" + "\n".join(failures))
    return "\n\n".join(parts)


def chart(result: Result, path: Path) -> None:
    cells = [c["key"] for c in result["cells"] if " cpu @" not in c["key"]]
    bars(result, cells, "rps", path, f"requests/s (h2load, h2c, c={CLIENTS} x {STREAMS} streams)")
