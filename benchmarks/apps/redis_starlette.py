"""Starlette on uvicorn for the redis+log scenario."""

from redis_log import set_and_log
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route


async def plaintext(request):
    return PlainTextResponse("Hello, World!")


async def redis_route(request):
    await set_and_log("/redis")
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/", plaintext), Route("/redis", redis_route)])
