"""The OpenAPI 3.1 document (veter.openapi): made from the routes' declarations,
valid by openapi-spec-validator, served at /openapi.json."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import sys
from typing import Annotated, Any

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


# -- the docs page: served when swagger-ui-py is there, never needed for the document --

HINT = "pip install 'veter[docs]'"


def docs_app(**openapi: Any) -> veter.App:
    app = veter.App(openapi=veter.OpenAPI(title="Docs", version="1.0.0", **openapi))

    @app.get("/ping")
    def ping(request: veter.Request) -> str:
        return "pong"

    return app


@pytest.fixture
def without_swagger_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    """swagger-ui-py as if not installed: a None in sys.modules makes its lookup
    and its import fail."""
    monkeypatch.setitem(sys.modules, "swagger_ui", None)
    with pytest.raises(ImportError):
        importlib.import_module("swagger_ui")


def hints(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "veter.server" and HINT in r.getMessage()]


def test_the_page_is_served_by_default_with_swagger_ui_installed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with TestClient(docs_app()) as client:
        page = client.get("/docs")
        bundle = client.get("/docs/assets/swagger-ui-bundle.js")
        document = client.get("/openapi.json")
    assert page.status == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert '"/openapi.json"' in page.text and "/docs/assets/swagger-ui-bundle.js" in page.text
    assert bundle.status == 200 and "SwaggerUIBundle" in bundle.text
    assert document.status == 200 and "/ping" in document.json()["paths"]
    assert hints(caplog) == []


def test_without_swagger_ui_the_document_is_served_and_the_page_left_out_said_once(
    without_swagger_ui: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    app = docs_app()
    with TestClient(app) as client:
        document = client.get("/openapi.json")
        page = client.get("/docs")
    with TestClient(app) as client:  # the app is frozen once: no second record
        assert client.get("/ping").text == "pong"
    assert document.status == 200 and "/ping" in document.json()["paths"]
    assert page.status == 404
    [record] = hints(caplog)
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        "API docs page not served at /docs: it needs the swagger-ui-py package: "
        "pip install 'veter[docs]' (or OpenAPI(docs_path=None) to serve only the document)"
    )
    assert [r.name for r in app.routes if r.name and r.name.startswith("veter.")] == ["veter.openapi"]


def test_an_app_that_names_the_page_fails_at_startup_without_swagger_ui(without_swagger_ui: None) -> None:
    for docs_path in ("/docs", "/api/docs"):
        app = docs_app(docs_path=docs_path)
        with pytest.raises(RuntimeError, match=r"needs Swagger UI's files from the swagger-ui-py package"):
            app.build_dispatcher()


def test_a_page_at_a_path_the_app_chose(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with TestClient(docs_app(docs_path="/api/docs")) as client:
        assert client.get("/api/docs").status == 200
        assert client.get("/api/docs/assets/swagger-ui.css").status == 200
        assert client.get("/docs").status == 404
    assert hints(caplog) == []


def test_no_page_and_no_record_with_docs_path_none(
    without_swagger_ui: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with TestClient(docs_app(docs_path=None)) as client:
        assert client.get("/openapi.json").status == 200
        assert client.get("/docs").status == 404
    assert hints(caplog) == []


def test_only_a_docs_path_the_app_set_makes_the_page_required() -> None:
    default = veter.OpenAPI()
    assert default.docs_path == "/docs" and not default.docs_page_required
    assert not dataclasses.replace(default, title="Other").docs_page_required
    assert veter.OpenAPI(docs_path="/docs").docs_page_required
    assert veter.OpenAPI(docs_path="/elsewhere").docs_page_required
    assert not veter.OpenAPI(docs_path=None).docs_page_required
