"""An app for supervisor tests."""

import asyncio
import os
import time

import veter

app = veter.App()


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
