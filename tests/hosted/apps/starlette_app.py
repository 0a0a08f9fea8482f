"""A Starlette app with the pieces that stress a server's ASGI: BaseHTTPMiddleware
(anyio task groups around each request), lifespan state, streaming, form data."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route


class Timing(BaseHTTPMiddleware):
    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers["x-through-middleware"] = "yes"
        return response


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
    yield {"counter": [0]}


async def home(request: Request) -> Response:
    return PlainTextResponse("home")


async def count(request: Request) -> Response:
    counter = request.state.counter
    counter[0] += 1
    return JSONResponse({"count": counter[0]})


async def echo_json(request: Request) -> Response:
    return JSONResponse(await request.json())


async def form(request: Request) -> Response:
    data = await request.form()
    return JSONResponse(dict(data))


async def stream(request: Request) -> Response:
    async def pieces() -> AsyncIterator[bytes]:
        for i in range(4):
            yield b"%d," % i

    return StreamingResponse(pieces())


#: A 3 MiB file, sent with the pathsend extension (FileResponse uses it when offered).
FILE = os.path.join(tempfile.gettempdir(), f"veter-starlette-file-{os.getpid()}.bin")
with open(FILE, "wb") as fh:
    fh.write(bytes(range(256)) * (12 * 1024))


async def file(request: Request) -> Response:
    return FileResponse(FILE, media_type="application/octet-stream")


app = Starlette(
    routes=[
        Route("/", home),
        Route("/count", count),
        Route("/json", echo_json, methods=["POST"]),
        Route("/form", form, methods=["POST"]),
        Route("/stream", stream),
        Route("/file", file),
    ],
    middleware=[Middleware(Timing)],
    lifespan=lifespan,
)
