"""An app for supervisor tests."""

import asyncio
import os
import time

import veter
from veter import health

app = veter.App()
health.enable(app)


@app.get("/")
def index(request: veter.Request) -> str:
    return f"pid={os.getpid()}"


@app.get("/slow")
async def slow(request: veter.Request) -> str:
    await asyncio.sleep(float(request.query.get("s", "0.5")))
    return f"slow pid={os.getpid()}"


@app.get("/block-forever")
def block_forever_handler(request: veter.Request) -> str:
    while True:  # a handler that never yields the loop: only the worker timeout ends it
        time.sleep(0.05)


@app.get("/slow-marked")
async def slow_marked(request: veter.Request) -> str:
    """Like /slow, but first writes this worker's pid to the file ?mark= (so a test
    can tell the request is in flight, and where)."""
    _mark(request.query["mark"])
    await asyncio.sleep(float(request.query.get("s", "0.5")))
    return f"slow pid={os.getpid()}"


def _mark(path: str) -> None:
    with open(path + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.replace(path + ".tmp", path)  # whole or absent, never half-written


@app.get("/spin")
def spin_for_the_profiler(request: veter.Request) -> str:
    """Burns 20 ms of CPU (the profiler test looks for this function's name)."""
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    return "spun"


@app.post("/echo")
async def echo(request: veter.Request) -> bytes:
    """Answers the body it was sent, after the pid (lifecycle tests check both)."""
    return f"pid={os.getpid()} ".encode() + await request.body()
