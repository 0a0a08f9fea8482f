"""The fanout service (examples/fanout) written for FastAPI: httpx's AsyncClient with
keep-alive, asyncpg's pool, served by uvicorn."""

import asyncio
import os
from contextlib import asynccontextmanager

import asyncpg
import httpx
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

INSERT = "INSERT INTO fanout_views (user_id, recommendations, ads) VALUES ($1, $2, $3) RETURNING id"


@asynccontextmanager
async def lifespan(app: FastAPI):
    connections = int(os.environ.get("FANOUT_CONNECTIONS", "50"))
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    base = os.environ.get("BACKEND_URL", "http://127.0.0.1:8001")
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=3.0) as http:
        app.state.http = http
        app.state.pg = await asyncpg.create_pool(os.environ["DATABASE_URL"], min_size=10, max_size=10)
        yield
        await app.state.pg.close()


app = FastAPI(lifespan=lifespan)


async def get_json(http, path):
    response = await http.get(path)
    response.raise_for_status()
    return response.json()


@app.get("/", response_class=PlainTextResponse)
async def plaintext():
    return "fanout"


@app.get("/fanout/{user_id}")
async def fanout(user_id: int, request: Request):
    http = request.app.state.http
    user = await get_json(http, f"/users/{user_id}")
    recommendations, ads = await asyncio.gather(
        get_json(http, f"/recommendations/{user['segment']}"),
        get_json(http, f"/ads/{user['segment']}"),
    )
    view_id = await request.app.state.pg.fetchval(INSERT, user_id, recommendations, ads)
    return {"user": user, "recommendations": recommendations, "ads": ads, "view": view_id}
