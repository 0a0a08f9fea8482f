"""aiohttp for the redis+log scenario, served by gunicorn's aiohttp uvloop worker."""

from aiohttp import web
from redis_log import set_and_log


async def plaintext(request):
    return web.Response(text="Hello, World!")


async def redis_route(request):
    await set_and_log("/redis")
    return web.Response(text="ok")


app = web.Application()
app.router.add_get("/", plaintext)
app.router.add_get("/redis", redis_route)
