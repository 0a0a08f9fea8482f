"""The fanout service (examples/fanout) written for aiohttp: aiohttp's client with a
keep-alive session, asyncpg's pool, served by gunicorn's aiohttp uvloop worker."""

import asyncio
import os

import aiohttp
import asyncpg
from aiohttp import web

INSERT = "INSERT INTO fanout_views (user_id, recommendations, ads) VALUES ($1, $2, $3) RETURNING id"
BACKEND = os.environ.get("BACKEND_URL", "http://127.0.0.1:8001")


async def resources(app):
    connector = aiohttp.TCPConnector(limit_per_host=int(os.environ.get("FANOUT_CONNECTIONS", "50")))
    app["http"] = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=3))
    app["pg"] = await asyncpg.create_pool(os.environ["DATABASE_URL"], min_size=10, max_size=10)
    yield
    await app["http"].close()
    await app["pg"].close()


async def get_json(session, path):
    async with session.get(BACKEND + path) as response:
        response.raise_for_status()
        return await response.json()


async def plaintext(request):
    return web.Response(text="fanout")


async def fanout(request):
    user_id = int(request.match_info["user_id"])
    http = request.app["http"]
    user = await get_json(http, f"/users/{user_id}")
    recommendations, ads = await asyncio.gather(
        get_json(http, f"/recommendations/{user['segment']}"),
        get_json(http, f"/ads/{user['segment']}"),
    )
    view_id = await request.app["pg"].fetchval(INSERT, user_id, recommendations, ads)
    return web.json_response({"user": user, "recommendations": recommendations, "ads": ads, "view": view_id})


app = web.Application()
app.cleanup_ctx.append(resources)
app.router.add_get("/", plaintext)
app.router.add_get("/fanout/{user_id}", fanout)
