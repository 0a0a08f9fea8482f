"""Hosted ASGI apps: the same apps on veter, uvicorn and Granian (issue 14)."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result
from . import hosted

NAME = "asgi"
TITLE = "Hosted ASGI apps: raw ASGI and FastAPI on veter, uvicorn and Granian"
METHOD = """
The same app modules served by each server: `apps/asgi_raw.py` (a raw ASGI 3 app,
JSON serialised per request) by `veter run`, uvicorn (httptools, uvloop) and
Granian's ASGI interface; `apps/fastapi_app.py` and `apps/starlette_app.py` by
`veter run` and by uvicorn. The raw app also by the uvicorn a user would pick today:
`--http zttp` (a Zig HTTP/1.1 parser) on uvloop, and on Python 3.14 `--http zttp
--loop zuvloop` (a Zig event loop on libuv, 3.14+), beside uvicorn (httptools,
uvloop) and veter on the same 3.14 (`-3.14` in the name; every other server runs on
Python 3.11, veter from the repo's `.venv`, the peers from `.work/venv-peers`).
`veter-async` is the reference for the front end: veter's own `async def` handlers
on the same routes (`apps/veter_async.py`), which on Python 3.11 run as one asyncio
task per request, as a hosted app does, with no scope, `receive` or `send`.
One process per server, pinned to CPU 0; wrk (one thread) pinned to CPU 1, closed
loop, c=100, not pipelined. CPU per request: oha open loop at a fixed rate, server
CPU time from /proc divided by the 2xx responses (the number to trust where wrk is
the limit). Every server with its access log off, lifespan off where it has the
switch. Servers interleaved per run, medians.
"""

SERVERS = [
    "veter-asgi",
    "uvicorn-raw",
    "uvicorn-zttp",
    "granian-asgi",
    "veter-asgi-3.14",
    "uvicorn-3.14",
    "uvicorn-zttp-zuvloop",
    "veter-async",
    "veter-fastapi",
    "fastapi",
    "veter-starlette",
    "uvicorn-starlette",
]
PAIRS = [
    ("veter-asgi", "uvicorn-raw"),
    ("veter-asgi", "uvicorn-zttp"),
    ("veter-asgi", "granian-asgi"),
    ("veter-asgi-3.14", "uvicorn-3.14"),
    ("veter-asgi-3.14", "uvicorn-zttp-zuvloop"),
    ("veter-async", "uvicorn-raw"),
    ("veter-fastapi", "fastapi"),
    ("veter-starlette", "uvicorn-starlette"),
]
PLAIN, JSON = hosted.CELLS
CHECKS: list[hosted.Check] = [
    ("raw ASGI plaintext ≥ 2.0x uvicorn", "veter-asgi", "uvicorn-raw", PLAIN, 2.0),
    ("raw ASGI JSON ≥ 2.0x uvicorn", "veter-asgi", "uvicorn-raw", JSON, 2.0),
    ("raw ASGI plaintext ≥ 1.3x Granian ASGI", "veter-asgi", "granian-asgi", PLAIN, 1.3),
    ("raw ASGI JSON ≥ 1.3x Granian ASGI", "veter-asgi", "granian-asgi", JSON, 1.3),
    ("FastAPI JSON ≥ 1.3x FastAPI on uvicorn", "veter-fastapi", "fastapi", JSON, 1.3),
    ("Starlette JSON ≥ 1.3x Starlette on uvicorn", "veter-starlette", "uvicorn-starlette", JSON, 1.3),
]


def plan(settings: Settings) -> Plan:
    return hosted.plan(NAME, SERVERS, settings)


def table(result: Result) -> str:
    return hosted.table(result, SERVERS, PAIRS, CHECKS)


def chart(result: Result, path: Path) -> None:
    bars(result, hosted.CELLS, "rps", path, "requests/s (closed loop, wrk)")
