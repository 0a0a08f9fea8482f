"""The typed scenario on Litestar (msgspec models), served by uvicorn."""

from typing import Annotated

import msgspec
from litestar import Litestar, get, post
from litestar.params import Parameter


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


@post("/order", status_code=200)
async def order(data: Order) -> Order:
    return data


@get("/items")
async def items(limit: Annotated[int, Parameter(ge=1, le=100)] = 10, offset: int = 0, q: str = "") -> dict:
    return {"limit": limit, "offset": offset, "q": q}


app = Litestar([order, items], openapi_config=None, debug=False)
