"""The typed scenario on veter: a POST whose JSON body (10 fields, a nested object,
a list) is validated into a msgspec Struct and echoed, a GET with three typed
query parameters, and the same two untyped (orjson body, query read by hand)."""

from typing import Annotated

import msgspec
import orjson
import veter
from veter.params import Query

app = veter.App()


class Address(msgspec.Struct):
    street: str
    city: str
    zip: str


class Order(msgspec.Struct):
    id: int
    customer: str
    email: str
    quantity: Annotated[int, msgspec.Meta(ge=1)]
    price: float
    currency: str
    express: bool
    note: str | None
    address: Address
    items: list[str]


@app.post("/order")
def order(order: Order) -> Order:
    return order


@app.get("/items")
def items(limit: Annotated[int, Query(ge=1, le=100)] = 10, offset: int = 0, q: str = "") -> dict[str, object]:
    return {"limit": limit, "offset": offset, "q": q}


@app.post("/order-raw")
def order_raw(request: veter.Request) -> veter.Response:
    # The fastest untyped form: a plain def handler taking the body already read.
    data = orjson.loads(request.body().value)
    return veter.Response(orjson.dumps(data), content_type="application/json")


@app.get("/items-raw")
def items_raw(request: veter.Request) -> dict[str, object]:
    query = request.query
    return {"limit": int(query.get("limit", 10)), "offset": int(query.get("offset", 0)), "q": query.get("q", "")}
