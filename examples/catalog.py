"""A small typed service: a product catalog kept in memory.

Typed parameters and bodies, a dependency, a form with an upload, background
work and the OpenAPI document with its docs page:

    veter run examples.catalog:app          # then open http://127.0.0.1:8000/docs

The test suite runs Schemathesis against it (tests/examples/test_catalog.py).
"""

from __future__ import annotations

import threading
from typing import Annotated, Literal

import msgspec

import veter
from veter.params import Depends, File, Form, Header, Query

app = veter.App(openapi=veter.OpenAPI(title="Catalog", version="1.0.0", docs_path="/docs"))

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=60)]
Tag = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9-]{1,20}$")]


class Size(msgspec.Struct):
    width_mm: Annotated[int, msgspec.Meta(ge=1, le=10_000)]
    height_mm: Annotated[int, msgspec.Meta(ge=1, le=10_000)]


class NewItem(msgspec.Struct):
    name: Name
    price_cents: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)]
    tags: Annotated[list[Tag], msgspec.Meta(max_length=10)] = []
    size: Size | None = None
    status: Literal["draft", "active"] = "draft"


class Item(msgspec.Struct):
    id: int
    name: str
    price_cents: int
    tags: list[str]
    size: Size | None
    status: str
    image_bytes: int = 0


class Page(msgspec.Struct):
    items: list[Item]
    total: int


class Store:
    """The catalog, shared by the requests of one worker."""

    def __init__(self) -> None:
        self.items: dict[int, Item] = {}
        self.next_id = 1
        self.lock = threading.Lock()
        self.log: list[str] = []

    def add(self, new: NewItem) -> Item:
        with self.lock:
            item = Item(self.next_id, new.name, new.price_cents, list(new.tags), new.size, new.status)
            self.items[item.id] = item
            self.next_id += 1
            return item


STORE = Store()


def store() -> Store:
    return STORE


def found(item_id: int, catalog: Annotated[Store, Depends(store)]) -> Item:
    item = catalog.items.get(item_id)
    if item is None:
        raise veter.HTTPException(404, f"no item {item_id}")
    return item


def editor(token: Annotated[str | None, Header(alias="X-Token")] = None) -> str:
    """The caller, from its token: any token of 'editor-' and a name."""
    if token is None or not token.startswith("editor-") or len(token) == len("editor-"):
        raise veter.HTTPException(401, "an editor's X-Token is needed")
    return token.removeprefix("editor-")


@app.get("/items", tags=["items"])
def list_items(
    catalog: Annotated[Store, Depends(store)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0)] = 0,
    tag: Annotated[list[str], Query(max_length=5)] = [],  # noqa: B006 - msgspec copies defaults
    q: Annotated[str | None, Query(min_length=2, max_length=40)] = None,
) -> Page:
    """List items, newest first, filtered by tags (all of them) and a name search."""
    chosen = [
        item
        for item in reversed(catalog.items.values())
        if all(t in item.tags for t in tag) and (q is None or q.lower() in item.name.lower())
    ]
    return Page(chosen[offset : offset + limit], len(chosen))


@app.get("/items/{item_id:int}", tags=["items"], responses={404: "No such item"})
def get_item(item: Annotated[Item, Depends(found)]) -> Item:
    """One item."""
    return item


@app.post("/items", tags=["items"], responses={401: "No editor token"})
def create_item(
    new: NewItem,
    who: Annotated[str, Depends(editor)],
    catalog: Annotated[Store, Depends(store)],
    tasks: veter.BackgroundTasks,
) -> Item:
    """Add an item (editors only)."""
    item = catalog.add(new)
    tasks.add_task(catalog.log.append, f"{who} added {item.id}")
    return item


@app.post(
    "/items/{item_id:int}/image", tags=["items"], responses={401: "No editor token", 404: "No such item"}
)
async def upload_image(
    item: Annotated[Item, Depends(found)],
    who: Annotated[str, Depends(editor)],
    image: Annotated[veter.UploadFile, File(description="The picture, any format")],
    caption: Annotated[str, Form(max_length=200)] = "",
) -> Item:
    """Attach a picture to an item (its size is kept)."""
    item.image_bytes = len(await image.read())
    return item


@app.post("/search", tags=["items"])
def search(
    catalog: Annotated[Store, Depends(store)],
    name: Annotated[str, Form(min_length=1, max_length=40)],
    max_price_cents: Annotated[int | None, Form(ge=0)] = None,
) -> Page:
    """Search by a form: name part and an optional price limit."""
    chosen = [
        item
        for item in catalog.items.values()
        if name.lower() in item.name.lower()
        and (max_price_cents is None or item.price_cents <= max_price_cents)
    ]
    return Page(chosen, len(chosen))
