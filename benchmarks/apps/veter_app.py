"""veter, the framework under test, serving the same routes as every peer.

Started from the repo root as `python -m veter run benchmarks.apps.veter_app:app`.
"""

import asyncio
import time

import veter

app = veter.App()


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/json")
def json_(request):
    return {"message": "Hello, World!"}


@app.post("/upload")
def upload(request):
    # The http2 scenario's POST: the body read, its length answered.
    return str(len(request.body().value))


@app.get("/sleep50")
async def sleep50(request):
    await asyncio.sleep(0.05)
    return "ok"


def _sleeper(ms: int):
    async def sleep(request):
        await asyncio.sleep(ms / 1000)
        return "ok"

    return sleep


for _ms in (1, 10, 100):
    app.get(f"/sleep{_ms}")(_sleeper(_ms))


async def _work() -> None:
    await asyncio.sleep(0.05)


@app.get("/hard")
async def hard(request):
    await _work()
    await asyncio.gather(_work(), _work())
    try:
        await asyncio.wait_for(_work(), 0.025)
    except TimeoutError:
        pass
    return "ok"


def _spin(seconds: float) -> None:
    """Burns `seconds` of this thread's CPU time (the overload scenario's work)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@app.get("/cpu5")
def cpu5(request):
    _spin(0.005)
    return "ok"


def block(request):
    time.sleep(0.5)
    return "ok"


try:
    app.get("/block", blocking=True)(block)
except TypeError:
    # blocking=True is not there yet; the blocking scenario then reports a failure.
    pass
