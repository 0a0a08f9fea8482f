"""aiohttp on uvloop, started with web.run_app, access log off."""

import asyncio
import os
import time

import uvloop
from aiohttp import web


async def plaintext(request):
    return web.Response(text="Hello, World!")


async def json_(request):
    return web.json_response({"message": "Hello, World!"})


def sleeper(ms: int):
    async def sleep(request):
        await asyncio.sleep(ms / 1000)
        return web.Response(text="ok")

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
    return web.Response(text="ok")


def spin(seconds: float) -> None:
    """Burns `seconds` of this thread's CPU time (the overload scenario's work)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def cpu5(request):
    spin(0.005)
    return web.Response(text="ok")


async def block(request):
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0.5)
    return web.Response(text="ok")


def make_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/", plaintext)
    app.router.add_get("/json", json_)
    app.router.add_get("/hard", hard)
    app.router.add_get("/block", block)
    app.router.add_get("/cpu5", cpu5)
    for ms in (1, 10, 50, 100):
        app.router.add_get(f"/sleep{ms}", sleeper(ms))
    return app


if __name__ == "__main__":
    web.run_app(
        make_app(),
        host="127.0.0.1",
        port=int(os.environ["PORT"]),
        access_log=None,
        loop=uvloop.new_event_loop(),
        print=None,
    )
