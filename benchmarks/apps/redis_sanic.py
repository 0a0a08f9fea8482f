"""Sanic for the redis+log scenario (the field's framework)."""

from redis_log import set_and_log
from sanic import Sanic
from sanic.response import text

app = Sanic("bench_redis")


@app.get("/")
async def plaintext(request):
    return text("Hello, World!")


@app.get("/redis")
async def redis_route(request):
    await set_and_log("/redis")
    return text("ok")
