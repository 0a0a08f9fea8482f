"""Typed handlers: JSON bodies into msgspec Structs, dataclasses, TypedDicts and
pydantic models; every problem listed in the 422; hostile bodies answered 4xx;
declared return types encoded."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, TypedDict

import msgspec
import pydantic
import pytest

import veter
from veter.params import Body, Query
from veter.testing import TestClient


class Address(msgspec.Struct):
    city: str
    zip: Annotated[str, msgspec.Meta(pattern=r"^\d{5}$")]


class Order(msgspec.Struct):
    id: int
    qty: Annotated[int, msgspec.Meta(ge=1)]
    tags: list[str]
    ship_to: Address
    note: str | None = None


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass
class Labelled:
    point: Point
    label: str = "none"
    weight: float = 1.0


class Pet(TypedDict):
    name: str
    age: int


class User(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)


class Receipt(msgspec.Struct):
    order: int
    total: float


def make_app() -> veter.App:
    app = veter.App(max_body_bytes=4096)

    @app.post("/orders")
    async def create(order: Order, dry: Annotated[bool, Query()] = False) -> Receipt:
        return Receipt(order=order.id, total=order.qty * 2.5)

    @app.post("/points")
    def points(p: Point) -> dict[str, float]:
        return {"sum": p.x + p.y}

    @app.post("/pets")
    def pets(pet: Pet) -> Pet:
        return pet

    @app.post("/users")
    def users(user: User) -> User:
        return user

    @app.post("/maybe")
    def maybe(order: Annotated[Order | None, Body()] = None) -> str:
        return "none" if order is None else str(order.id)

    @app.post("/many")
    def many(items: list[Point]) -> str:
        return str(len(items))

    @app.post("/labelled")
    def labelled(items: list[Labelled]) -> list[Labelled]:
        return items

    return app


GOOD = {"id": 1, "qty": 3, "tags": ["a"], "ship_to": {"city": "Oslo", "zip": "01234"}}


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(make_app()) as c:
        yield c  # type: ignore[misc]


def test_struct_body_and_struct_answer(client: TestClient) -> None:
    r = client.post("/orders", json=GOOD)
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"order": 1, "total": 7.5}


def test_every_body_problem_is_listed_with_its_place(client: TestClient) -> None:
    bad = {"id": "one", "qty": 0, "tags": ["a", 2], "ship_to": {"zip": "12"}}
    r = client.post("/orders", json=bad)
    assert r.status == 422
    places = {tuple(p["loc"]): p for p in r.json()["detail"]}
    assert set(places) == {
        ("body", "id"),
        ("body", "qty"),
        ("body", "tags", 1),
        ("body", "ship_to", "city"),
        ("body", "ship_to", "zip"),
    }
    assert places[("body", "ship_to", "city")]["type"] == "missing"
    assert places[("body", "qty")]["input"] == 0


def test_dataclass_typeddict_and_pydantic(client: TestClient) -> None:
    assert client.post("/points", json={"x": 1, "y": 2.5}).json() == {"sum": 3.5}


def test_echoed_dataclass_keeps_its_defaults(client: TestClient) -> None:
    # msgspec leaves immutable defaults out of a decoded dataclass's __dict__ and
    # encodes from it: the answer must still carry them.
    r = client.post(
        "/labelled", json=[{"point": {"x": 1, "y": 2}}, {"point": {"x": 0, "y": 0}, "label": "b"}]
    )
    assert r.json() == [
        {"point": {"x": 1.0, "y": 2.0}, "label": "none", "weight": 1.0},
        {"point": {"x": 0.0, "y": 0.0}, "label": "b", "weight": 1.0},
    ]
    assert client.post("/pets", json={"name": "rex", "age": 3}).json() == {"name": "rex", "age": 3}
    assert client.post("/users", json={"name": "ann", "age": 30}).json() == {"name": "ann", "age": 30}
    r = client.post("/users", json={"name": 1, "age": -1})
    assert r.status == 422
    assert {tuple(p["loc"]) for p in r.json()["detail"]} == {("body", "name"), ("body", "age")}
    r = client.post("/pets", json={"name": "rex"})
    assert r.status == 422 and r.json()["detail"][0]["loc"] == ["body", "age"]


def test_lists_of_models(client: TestClient) -> None:
    assert client.post("/many", json=[{"x": 1, "y": 1}, {"x": 2, "y": 2}]).text == "2"
    r = client.post("/many", json=[{"x": 1, "y": 1}, {"x": "a"}])
    assert {tuple(p["loc"]) for p in r.json()["detail"]} == {("body", 1, "x"), ("body", 1, "y")}


def test_optional_body(client: TestClient) -> None:
    assert client.post("/maybe").text == "none"
    assert client.post("/maybe", json=GOOD).text == "1"


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"", {}, 422),
        (b"{not json", {"Content-Type": "application/json"}, 400),
        (json.dumps(GOOD).encode(), {"Content-Type": "text/plain"}, 415),
        (json.dumps(GOOD).encode(), {"Content-Type": "application/x-www-form-urlencoded"}, 415),
        (json.dumps(GOOD).encode(), {"Content-Type": "application/vnd.api+json"}, 200),
        (json.dumps(GOOD).encode(), {}, 200),
        (b"x" * 5000, {"Content-Type": "application/json"}, 413),
        (b"[" * 2000 + b"]" * 2000, {"Content-Type": "application/json"}, 400),  # max_json_depth
        (b'{"id": 1' + b"0" * 400 + b', "qty": 1}', {"Content-Type": "application/json"}, 422),
        (b'{"id": 1, "qty": 1e400}', {"Content-Type": "application/json"}, 422),
        # Found by Schemathesis: a huge integer inside a wrong value was echoed in the 422.
        (b'{"id": 1, "qty": 1, "tags": [-73615181900405511064672483139387392]}', {}, 422),
        (b'{"id": 1, "qty": 1, "tags": "x", "ship_to": {"city": [1, ' + b"9" * 30 + b"]}}", {}, 422),
        (b'{"id": 3.0, "qty": 2, "tags": [], "ship_to": {"city": "a", "zip": "12345"}}', {}, 200),
        (b'{"id": "\xff\xfe"}', {"Content-Type": "application/json"}, 400),
        (b'{"id": 1, "id": 2, "qty": 1, "tags": [], "ship_to": {"city": "a", "zip": "12345"}}', {}, 200),
    ],
)
def test_hostile_and_wrong_bodies_get_4xx(
    client: TestClient, content: bytes, headers: dict[str, str], status: int
) -> None:
    r = client.post("/orders", content=content, headers=headers)
    assert r.status == status, r.text


def test_deep_nesting_inside_a_model_is_not_a_500(client: TestClient) -> None:
    deep = b'{"id": 1, "qty": 1, "tags": ' + b"[" * 1500 + b"]" * 1500 + b"}"
    assert client.post("/orders", content=deep).status in (400, 422)


def test_a_def_handler_with_a_json_body_stays_a_plain_call() -> None:
    # The body is read before the handler starts: no coroutine, no task per request,
    # unless the route streams its body.
    import inspect

    from veter.routing import Route
    from veter.typed import typed_route

    def create(order: Order) -> Receipt:
        return Receipt(order=order.id, total=1.0)

    plain = typed_route(Route("/o", ("POST",), create), {})
    assert not inspect.iscoroutinefunction(plain.handler)
    streamed = typed_route(Route("/o", ("POST",), create, stream_body=True), {})
    assert inspect.iscoroutinefunction(streamed.handler)

    async def create_async(order: Order) -> Receipt:
        return create(order)

    app = veter.App()
    app.post("/plain")(create)
    app.post("/streamed", stream_body=True)(create_async)
    with TestClient(app) as c:
        for path in ("/plain", "/streamed"):
            assert c.post(path, json=GOOD).json() == {"order": 1, "total": 1.0}
            assert c.post(path, json={"id": "x"}).status == 422


def test_ready_value_is_the_body_without_awaiting() -> None:
    app = veter.App()

    @app.post("/len")
    def length(request: veter.Request) -> str:
        return str(len(request.body().value))

    with TestClient(app) as c:
        assert c.post("/len", content=b"12345").text == "5"
