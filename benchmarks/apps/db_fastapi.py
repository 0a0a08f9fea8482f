"""FastAPI for the db scenario, on uvicorn and on veter: an asyncpg pool of 10."""

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from pgpool import LazyPool

pool = LazyPool()
app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/", response_class=PlainTextResponse)
async def plaintext():
    return "Hello, World!"


@app.get("/db")
async def db():
    return await pool.random_item()
