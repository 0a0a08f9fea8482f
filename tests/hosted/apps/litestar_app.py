"""A Litestar service: typed routes (msgspec), a lifespan with state, forms and
uploads, streaming, server-sent events, background tasks and a WebSocket."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Litestar, Request, get, post, websocket
from litestar.background_tasks import BackgroundTask
from litestar.connection import WebSocket
from litestar.datastructures import State, UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import WebSocketDisconnect
from litestar.params import Body
from litestar.response import Response, ServerSentEvent, Stream

seen: dict[str, Any] = {"background": 0, "ws_closed": None}


@dataclass
class Item:
    name: str
    price: float


@asynccontextmanager
async def lifespan(app: Litestar) -> AsyncIterator[None]:
    app.state.pool = "the-pool"
    yield


@get("/")
async def root() -> dict[str, str]:
    return {"hello": "world"}


@get("/items/{item_id:int}")
async def read_item(item_id: int, q: str | None = None) -> dict[str, Any]:
    return {"item_id": item_id, "q": q}


@post("/items")
async def create_item(data: Item) -> Item:
    return data


@get("/state")
async def state(request: Request[Any, Any, State]) -> dict[str, Any]:
    return {"pool": request.app.state.pool, "request_id": request.scope["state"].get("request_id")}


@dataclass
class Person:
    name: str
    age: int


@post("/form")
async def form(data: Annotated[Person, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> dict[str, Any]:
    return {"name": data.name, "age": data.age}


@post("/upload")
async def upload(
    data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)],
) -> dict[str, Any]:
    f: UploadFile = data["file"]
    content = await f.read()
    return {
        "filename": f.filename,
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "note": data["note"],
    }


@get("/stream")
async def stream() -> Stream:
    async def pieces() -> AsyncIterator[str]:
        for i in range(5):
            yield f"piece {i}\n"

    return Stream(pieces(), media_type="text/plain")


@get("/sse")
async def sse() -> ServerSentEvent:
    async def events() -> AsyncIterator[str]:
        for i in range(3):
            yield str(i)

    return ServerSentEvent(events())


async def count_background() -> None:
    seen["background"] += 1


@post("/background", status_code=200)
async def background() -> Response[str]:
    return Response("queued", background=BackgroundTask(count_background))


@get("/seen")
async def get_seen() -> dict[str, Any]:
    return dict(seen)


@websocket("/ws")
async def echo(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    try:
        while True:
            data = await socket.receive_json()
            await socket.send_json({"echo": data})
    except WebSocketDisconnect as exc:
        seen["ws_closed"] = exc.code


app = Litestar(
    route_handlers=[
        root,
        read_item,
        create_item,
        state,
        form,
        upload,
        stream,
        sse,
        background,
        get_seen,
        echo,
    ],
    lifespan=[lifespan],
)
