"""WebSocket echo: closed-loop round trips with 1,000 and 100 connected clients."""

from pathlib import Path

from .. import paths
from ..charts import bar_panels
from ..loadgen import Metrics, ws_url, wsload
from ..measure import Cell, Plan, Settings, Target
from ..report import Result, md_table, measured_servers, num, value
from ..servers import Server, Veter
from ..variants import uvicorn

NAME = "ws"
TITLE = "WebSocket echo: 1,000 and 100 connected clients, and 2 KiB JSON compressed"
METHOD = """
Each server echoes every message back on `/ws` (apps/ws_*.py), one process on CPU 0,
access logs off: veter (`@app.websocket`, `async for message in ws: await
ws.send(message)`), uvicorn with the `websockets` library (`--ws websockets`, uvloop,
httptools) serving a raw ASGI echo, and aiohttp's `web.WebSocketResponse` on uvloop.
The load generator is our own Go program (go/wsload, gorilla/websocket) pinned to
CPU 1: it opens all N connections first (at most 64 handshakes in flight, 5 s each, and
it fails the cell if any connection cannot be made), then every client runs a closed
loop for the cell's duration: send a 32-byte text message, wait for the echo, check
it, send the next. Only round trips that complete inside the window count;
connection setup and closing are outside it. Latency is per round trip (log-linear
histogram, 0.1% precision), 5 s timeout per round trip. In the plain cells the client
offers no compression, so no server compresses. The compressed cell (`-deflate`,
gobwas/ws) offers permessage-deflate with no context takeover on either side (what
gorilla and most clients offer) and fails the cell unless the server agrees. Its
messages are 256 different JSON documents of about 2 KiB, each compressed once up
front and sent in turn. Every echo is inflated and compared byte for byte. Each server
compresses with its default settings: veter zlib level 1, aiohttp and `websockets` the
zlib default. Server CPU per round trip: utime+stime of the server's process group from
/proc at the window's start and end. The generator's own CPU share is recorded, so a
cell where it, not the server, is the limit shows. The warm-up is the plain echo with
100 clients. Servers interleaved per run, medians.
"""

MESSAGE_BYTES = 32
CLIENTS = [1000, 100]
DEFLATE_BYTES = 2048
DEFLATE_CLIENTS = 1000
WARMUP_CLIENTS = 100
ROUTES = frozenset({"plaintext", "ws"})
METRICS = ("p50_ms", "p99_ms", "cpu_us_per_round_trip", "errors", "connect_errors", "loadgen_cpu_share")


def _key(clients: int, deflate: bool = False) -> str:
    if deflate:
        return f"deflate 2 KiB JSON x{clients:,} clients"
    return f"echo x{clients:,} clients"


CELLS = [_key(c) for c in CLIENTS] + [_key(DEFLATE_CLIENTS, deflate=True)]


def _veter(port: int, workers: int) -> list[str]:
    argv = paths.veter_run("benchmarks.apps.ws_veter:app")
    return [*argv, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]


def _uvicorn_websockets(port: int, workers: int) -> list[str]:
    return [*uvicorn("ws_asgi:app", port, workers), "--ws", "websockets", "--lifespan", "off"]


def _aiohttp(port: int, workers: int) -> list[str]:
    return [str(paths.PEERS_BIN / "python"), "ws_aiohttp.py"]


def _servers() -> list[Server]:
    needs = (paths.PEERS_BIN / "python", paths.WSLOAD)
    return [
        Veter("veter", "veter, @app.websocket echo", ROUTES, _veter, cwd=paths.REPO, needs=(paths.WSLOAD,)),
        Server(
            "uvicorn-websockets",
            "uvicorn --ws websockets (uvloop, httptools), raw ASGI echo",
            ROUTES,
            _uvicorn_websockets,
            needs=needs,
        ),
        Server("aiohttp", "aiohttp web.WebSocketResponse on uvloop", ROUTES, _aiohttp, needs=needs),
    ]


def _echo(target: Target, clients: int, seconds: float, deflate: bool = False) -> Metrics:
    url = ws_url(target.url("ws"))
    size = DEFLATE_BYTES if deflate else MESSAGE_BYTES
    return wsload(url, clients, seconds, size, server_pgid=target.running.pgid, deflate=deflate)


def _cell(clients: int, deflate: bool = False) -> Cell:
    def run(target: Target) -> Metrics:
        return _echo(target, clients, target.settings.seconds, deflate)

    size = DEFLATE_BYTES if deflate else MESSAGE_BYTES
    params = {"clients": clients, "message_bytes": size, "deflate": deflate}
    return Cell(_key(clients, deflate), "ws", run, params=params)


def _warmup(target: Target) -> Metrics:
    return _echo(target, WARMUP_CLIENTS, target.settings.warmup)


def plan(settings: Settings) -> Plan:
    cells = [_cell(c) for c in CLIENTS] + [_cell(DEFLATE_CLIENTS, deflate=True)]
    return Plan(NAME, _servers(), cells, warmup=_warmup)


def _failure(result: Result, server: str, cell: str) -> str | None:
    """The first run's error for a cell that has no numbers, if any."""
    runs = result["results"].get(server, {}).get(cell, {}).get("runs", [])
    return next((run["error"] for run in runs if "error" in run), None)


def table(result: Result) -> str:
    cells = [c["key"] for c in result["cells"]]
    head = cells[0]
    servers = sorted(measured_servers(result), key=lambda s: -(value(result, s, head, "round_trips_per_s") or 0))
    veter = value(result, "veter", head, "round_trips_per_s")
    header = ["server"]
    for cell in cells:
        header += [f"{cell}: round trips/s", "p50 / p99 ms", "server CPU µs per round trip"]
    header += ["errors", f"{head} vs veter"]
    rows = []
    failures = []
    busy = []
    for server in servers:
        row = [f"**{server}**" if server == "veter" else server]
        errors = 0
        for cell in cells:
            rate = value(result, server, cell, "round_trips_per_s")
            failed = _failure(result, server, cell)
            if rate is None and failed:
                failures.append(f"- {server}, {cell}: {failed}")
                row += ["failed", "–", "–"]
                continue
            got = {m: value(result, server, cell, m) for m in METRICS}
            latency = " / ".join(num(got[m], 2) for m in ("p50_ms", "p99_ms"))
            row += [num(rate), latency, num(got["cpu_us_per_round_trip"], 1)]
            errors += int(got["errors"] or 0) + int(got["connect_errors"] or 0)
            share = got["loadgen_cpu_share"]
            if share is not None and share > 0.9:
                busy.append(f"{server} {cell} ({num(share * 100, 0)}%)")
        mine = value(result, server, head, "round_trips_per_s")
        row += [str(errors), num(mine / veter, 2, "x") if mine and veter else "–"]
        rows.append(row)
    note = (
        f"Echo round trips per second (higher is better) and latency per round trip, medians of runs. "
        f"Every client is a closed loop: it sends a {MESSAGE_BYTES}-byte text message (in the deflate cell, "
        f"a compressed JSON document of about {DEFLATE_BYTES:,} bytes), waits for the echo, and sends the "
        "next; all clients connect before the clock starts. Errors: connections that failed or broke, wrong "
        "echoes and round trips over 5 s."
    )
    deflate_key = _key(DEFLATE_CLIENTS, deflate=True)
    partial: list[str] = []
    for server in servers:
        share = value(result, server, deflate_key, "compressed_share")
        if share is not None and share < 0.99:
            partial.append(f"{server} compressed only {num(share * 100, 0)}% of its echoes")
    shares = ", ".join(
        f"{s} {num((value(result, s, c, 'loadgen_cpu_share') or 0) * 100, 0)}%"
        for s in servers
        for c in [head, deflate_key]
        if value(result, s, c, "loadgen_cpu_share") is not None
    )
    note += f" The load generator's CPU share per cell ({head}, then deflate): {shares}."
    parts = [note, md_table(header, rows)]
    if busy:
        parts.append(
            "The load generator's CPU was over 90% busy in: " + ", ".join(busy) + "; there the rate may be its limit."
        )
    if partial:
        parts.append("In the deflate cell, " + "; ".join(partial) + ".")
    if failures:
        parts.append("Failed cells:\n\n" + "\n".join(failures))
    return "\n\n".join(parts)


def chart(result: Result, path: Path) -> None:
    cells = [c["key"] for c in result["cells"]]
    bar_panels(
        result,
        cells,
        [
            ("round_trips_per_s", "echo round trips/s (closed loop)", False),
            ("p99_ms", "p99 latency per round trip, ms", False),
        ],
        path,
    )
