"""BlackSheep on uvicorn."""

import asyncio

from blacksheep import Application, get, json, text

app = Application()


@get("/")
async def plaintext():
    return text("Hello, World!")


@get("/json")
async def json_():
    return json({"message": "Hello, World!"})


def add_sleeper(ms: int) -> None:
    async def sleep():
        await asyncio.sleep(ms / 1000)
        return text("ok")

    app.router.add_get(f"/sleep{ms}", sleep)


for _ms in (1, 10, 50, 100):
    add_sleeper(_ms)


async def work() -> None:
    await asyncio.sleep(0.05)


@get("/hard")
async def hard():
    await work()
    await asyncio.gather(work(), work())
    try:
        await asyncio.wait_for(work(), 0.025)
    except TimeoutError:
        pass
    return text("ok")
