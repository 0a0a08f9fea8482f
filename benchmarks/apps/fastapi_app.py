"""FastAPI on uvicorn."""

import asyncio
import time

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/", response_class=PlainTextResponse)
async def plaintext():
    return "Hello, World!"


@app.get("/json")
async def json_():
    return {"message": "Hello, World!"}


def add_sleeper(ms: int) -> None:
    async def sleep():
        await asyncio.sleep(ms / 1000)
        return PlainTextResponse("ok")

    app.get(f"/sleep{ms}")(sleep)


for _ms in (1, 10, 50, 100):
    add_sleeper(_ms)


async def work() -> None:
    await asyncio.sleep(0.05)


@app.get("/hard", response_class=PlainTextResponse)
async def hard():
    await work()
    await asyncio.gather(work(), work())
    try:
        await asyncio.wait_for(work(), 0.025)
    except TimeoutError:
        pass
    return "ok"


@app.get("/block", response_class=PlainTextResponse)
def block():
    # FastAPI runs `def` path operations in a thread pool: its documented way.
    time.sleep(0.5)
    return "ok"
