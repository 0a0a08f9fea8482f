"""The OpenAPI 3.1 document (veter.openapi): made from the routes' declarations,
valid by openapi-spec-validator, served at /openapi.json."""

from __future__ import annotations

from typing import Annotated

import msgspec
import pydantic
import pytest
from openapi_spec_validator import validate

import veter
from veter.params import Depends, Header, Query
from veter.testing import TestClient


class Item(msgspec.Struct):
    name: str
    price: Annotated[float, msgspec.Meta(gt=0)]
    tags: list[str] = []


class Owner(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)


def token(x_token: Annotated[str, Header()]) -> str:
    return x_token


def make_app() -> veter.App:
    app = veter.App(
        openapi=veter.OpenAPI(
            title="Shop",
            version="2.1.0",
            description="Items and owners.",
            security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},
            security=[{"bearer": []}],
        )
    )
    items = veter.Router(prefix="/items", tags=["items"])

    @items.post("/", responses={409: "An item of that name exists"})
    def add_item(item: Item, auth: Annotated[str, Depends(token)]) -> Item:
        """Add an item.

        The name must be new."""
        return item

    @items.get("/{item_id:int}")
    def get_item(item_id: int, fields: Annotated[list[str] | None, Query()] = None) -> Item:
        return Item(name="x", price=1.0)

    @app.post("/owners", tags=["owners"])
    def add_owner(owner: Owner) -> Owner:
        return owner

    @app.get("/plain/{name}")
    def plain(request: veter.Request, name: str) -> str:
        return name

    @app.get("/hidden", include_in_schema=False)
    def hidden(request: veter.Request) -> str:
        return "h"

    @app.websocket("/ws")
    async def ws(sock: veter.WebSocket) -> None:
        await sock.accept()

    app.include(items)
    return app


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = make_app().openapi_document()
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert doc["info"] == {"title": "Shop", "version": "2.1.0", "description": "Items and owners."}
    assert set(doc["paths"]) == {"/items/", "/items/{item_id}", "/owners", "/plain/{name}"}


def test_operations_say_what_the_declarations_say() -> None:
    doc = make_app().openapi_document()
    add = doc["paths"]["/items/"]["post"]
    assert add["summary"] == "Add an item." and add["description"] == "The name must be new."
    assert add["tags"] == ["items"]
    assert add["parameters"] == [
        {"name": "x-token", "in": "header", "required": True, "schema": {"type": "string"}}
    ]
    assert add["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Item"
    }
    assert set(add["responses"]) == {"200", "400", "409", "413", "415", "422"}
    assert add["responses"]["409"] == {"description": "An item of that name exists"}
    item = doc["components"]["schemas"]["Item"]
    assert item["properties"]["price"] == {"type": "number", "exclusiveMinimum": 0}
    assert item["required"] == ["name", "price"]
    get = doc["paths"]["/items/{item_id}"]["get"]
    assert {p["name"]: p["in"] for p in get["parameters"]} == {"item_id": "path", "fields": "query"}
    owner = doc["components"]["schemas"]["Owner"]
    assert owner["properties"]["age"]["minimum"] == 0
    assert doc["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert doc["security"] == [{"bearer": []}]
    plain = doc["paths"]["/plain/{name}"]["get"]
    assert plain["parameters"] == [
        {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    ]
    assert set(plain["responses"]) == {"200"}


def test_served_at_its_path() -> None:
    app = make_app()
    with TestClient(app) as client:
        r = client.get("/openapi.json")
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == app.openapi_document()
    assert "/openapi.json" not in r.json()["paths"]


def test_not_served_without_openapi() -> None:
    app = veter.App()
    with TestClient(app) as client:
        assert client.get("/openapi.json").status == 404


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="must start with '/'"):
        veter.OpenAPI(path="openapi.json")
    with pytest.raises(ValueError, match="not an HTTP status"):
        veter.App().add_route("/x", lambda request: "", responses={999: "?"})
