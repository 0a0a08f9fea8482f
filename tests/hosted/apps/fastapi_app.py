"""A FastAPI service as teams write them: typed routes, a lifespan with state,
forms and uploads, streaming and server-sent events, background tasks."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import BackgroundTasks, FastAPI, File, Form, Request, UploadFile, WebSocket, WebSocketDisconnect
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel

seen: dict[str, Any] = {"background": 0, "disconnected": 0, "ws_closed": None}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, str]]:
    yield {"pool": "the-pool"}


app = FastAPI(lifespan=lifespan)


class Item(BaseModel):
    name: str
    price: float
    tags: list[str] = []


@app.get("/")
async def root() -> dict[str, str]:
    return {"hello": "world"}


@app.get("/items/{item_id}")
async def read_item(item_id: int, q: str | None = None) -> dict[str, Any]:
    return {"item_id": item_id, "q": q}


@app.post("/items")
async def create_item(item: Item) -> Item:
    return item


@app.get("/sync")
def sync_route() -> dict[str, bool]:
    return {"threadpool": True}


@app.get("/state")
async def state(request: Request) -> dict[str, Any]:
    return {"pool": request.state.pool, "request_id": request.scope["state"].get("request_id")}


@app.post("/form")
async def form(name: Annotated[str, Form()], age: Annotated[int, Form()]) -> dict[str, Any]:
    return {"name": name, "age": age}


@app.post("/upload")
async def upload(file: Annotated[UploadFile, File()], note: Annotated[str, Form()]) -> dict[str, Any]:
    data = await file.read()
    return {
        "filename": file.filename,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "note": note,
    }


@app.post("/consume")
async def consume(request: Request) -> dict[str, int]:
    """Reads a body of any size piece by piece, keeping none of it."""
    total = 0
    async for piece in request.stream():
        total += len(piece)
    return {"total": total}


@app.get("/stream")
async def stream() -> StreamingResponse:
    async def pieces() -> AsyncIterator[bytes]:
        for i in range(5):
            yield f"piece {i}\n".encode()

    return StreamingResponse(pieces(), media_type="text/plain")


@app.get("/sse")
async def sse() -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        for i in range(3):
            yield f"event: tick\ndata: {i}\n\n"
            await asyncio.sleep(0.01)

    return StreamingResponse(events(), media_type="text/event-stream")


@app.get("/forever")
async def forever(request: Request) -> StreamingResponse:
    async def ticks() -> AsyncIterator[bytes]:
        try:
            while True:
                yield b"tick\n"
                await asyncio.sleep(0.01)
        finally:
            seen["disconnected"] += 1

    return StreamingResponse(ticks(), media_type="text/plain")


@app.post("/background")
async def background(tasks: BackgroundTasks) -> PlainTextResponse:
    async def later() -> None:
        await asyncio.sleep(0.3)
        seen["background"] += 1

    tasks.add_task(later)
    return PlainTextResponse("queued")


@app.get("/seen")
async def get_seen() -> dict[str, Any]:
    return seen


@app.get("/fail")
async def fail() -> None:
    raise RuntimeError("the handler failed")


@app.websocket("/ws/{room}")
async def chat(websocket: WebSocket, room: str) -> None:
    await websocket.accept()
    try:
        while True:
            data = await websocket.receive_json()
            await websocket.send_json({"room": room, "echo": data})
    except WebSocketDisconnect as exc:
        seen["ws_closed"] = exc.code


@app.get("/block/{n}")
async def block(n: int) -> dict[str, int]:
    time.sleep(0.4)  # noqa: ASYNC251 - blocks the loop on purpose: the lag monitor names it
    return {"blocked": n}
