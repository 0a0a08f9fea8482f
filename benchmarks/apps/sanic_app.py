"""Sanic, run by its own CLI."""

import asyncio
import time

from sanic import Sanic
from sanic.response import json, text

app = Sanic("bench")


@app.get("/")
async def plaintext(request):
    return text("Hello, World!")


@app.get("/json")
async def json_(request):
    return json({"message": "Hello, World!"})


def add_sleeper(ms: int) -> None:
    async def sleep(request):
        await asyncio.sleep(ms / 1000)
        return text("ok")

    app.add_route(sleep, f"/sleep{ms}", name=f"sleep{ms}")


for _ms in (1, 10, 50, 100):
    add_sleeper(_ms)


async def work() -> None:
    await asyncio.sleep(0.05)


@app.get("/hard")
async def hard(request):
    await work()
    await asyncio.gather(work(), work())
    try:
        await asyncio.wait_for(work(), 0.025)
    except TimeoutError:
        pass
    return text("ok")


@app.get("/block")
async def block(request):
    # Sanic's advice for blocking code: hand it to an executor.
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0.5)
    return text("ok")
