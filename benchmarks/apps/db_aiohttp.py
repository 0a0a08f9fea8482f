"""aiohttp for the db scenario, served by gunicorn's aiohttp uvloop worker."""

from aiohttp import web
from pgpool import LazyPool

pool = LazyPool()


async def plaintext(request):
    return web.Response(text="Hello, World!")


async def db(request):
    return web.json_response(await pool.random_item())


app = web.Application()
app.router.add_get("/", plaintext)
app.router.add_get("/db", db)
