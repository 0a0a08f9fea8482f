"""A Quart service (Flask's API, on ASGI): routes, JSON, forms and uploads,
streaming, a WebSocket, startup hooks."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from quart import Quart, request, websocket

app = Quart(__name__)
seen: dict[str, Any] = {"started": False}


@app.before_serving
async def startup() -> None:
    seen["started"] = True


@app.get("/")
async def root() -> dict[str, Any]:
    return {"hello": "world", "started": seen["started"]}


@app.get("/items/<int:item_id>")
async def read_item(item_id: int) -> dict[str, Any]:
    return {"item_id": item_id, "q": request.args.get("q")}


@app.post("/items")
async def create_item() -> tuple[dict[str, Any], int]:
    return await request.get_json(), 201


@app.post("/form")
async def form() -> dict[str, Any]:
    data = await request.form
    return {"name": data["name"], "age": int(data["age"])}


@app.post("/upload")
async def upload() -> dict[str, Any]:
    files = await request.files
    data = await request.form
    content = files["file"].read()
    return {
        "filename": files["file"].filename,
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "note": data["note"],
    }


@app.get("/stream")
async def stream() -> Any:
    async def pieces() -> AsyncIterator[bytes]:
        for i in range(5):
            yield f"piece {i}\n".encode()

    return pieces(), 200, {"Content-Type": "text/plain"}


@app.websocket("/ws")
async def echo() -> None:
    while True:
        data = await websocket.receive()
        await websocket.send(f"echo {data}")
