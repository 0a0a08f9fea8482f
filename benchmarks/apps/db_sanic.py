"""Sanic for the db scenario."""

from pgpool import LazyPool
from sanic import Sanic
from sanic.response import json, text

app = Sanic("bench_db")
pool = LazyPool()


@app.get("/")
async def plaintext(request):
    return text("Hello, World!")


@app.get("/db")
async def db(request):
    return json(await pool.random_item())
