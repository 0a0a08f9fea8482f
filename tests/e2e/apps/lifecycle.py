"""An app for process tests: its hooks write to the file named by VETER_TEST_EVENTS."""

import asyncio
import os

import veter

app = veter.App()


def record(event: str) -> None:
    with open(os.environ["VETER_TEST_EVENTS"], "a") as fh:
        fh.write(event + "\n")


@app.on_startup
async def started() -> None:
    record("startup")


@app.on_shutdown
def stopped() -> None:
    record("shutdown")


@app.get("/")
def index(request: veter.Request) -> str:
    return "ok"


@app.get("/slow")
async def slow(request: veter.Request) -> str:
    await asyncio.sleep(float(request.query.get("s", "1")))
    return "finished"
