"""Starlette on uvicorn for the db scenario."""

from pgpool import LazyPool
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

pool = LazyPool()


async def plaintext(request):
    return PlainTextResponse("Hello, World!")


async def db(request):
    return JSONResponse(await pool.random_item())


app = Starlette(routes=[Route("/", plaintext), Route("/db", db)])
