"""Starlette on uvicorn: the routes every async peer serves."""

import asyncio
import time

from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


async def plaintext(request):
    return PlainTextResponse("Hello, World!")


async def json_(request):
    return JSONResponse({"message": "Hello, World!"})


def sleeper(ms: int):
    async def sleep(request):
        await asyncio.sleep(ms / 1000)
        return PlainTextResponse("ok")

    return sleep


async def work() -> None:
    await asyncio.sleep(0.05)


async def hard(request):
    await work()
    await asyncio.gather(work(), work())
    try:
        await asyncio.wait_for(work(), 0.025)
    except TimeoutError:
        pass
    return PlainTextResponse("ok")


def block(request):
    # Starlette runs a plain `def` endpoint in its thread pool: its documented way.
    time.sleep(0.5)
    return PlainTextResponse("ok")


routes = [
    Route("/", plaintext),
    Route("/json", json_),
    Route("/hard", hard),
    Route("/block", block),
    *[Route(f"/sleep{ms}", sleeper(ms)) for ms in (1, 10, 50, 100)],
]
app = Starlette(routes=routes)
