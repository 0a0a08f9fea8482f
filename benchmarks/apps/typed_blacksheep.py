"""The typed scenario on BlackSheep (a pydantic v2 body, typed query parameters),
served by uvicorn."""

from blacksheep import Application, FromJSON, FromQuery, get, json, post
from pydantic import BaseModel, Field

app = Application()


class Address(BaseModel):
    street: str
    city: str
    zip: str


class Order(BaseModel):
    id: int
    customer: str
    email: str
    quantity: int = Field(ge=1)
    price: float
    currency: str
    express: bool
    note: str | None
    address: Address
    items: list[str]


@post("/order")
async def order(data: FromJSON[Order]):
    return json(data.value.model_dump(mode="json"))


LIMIT, OFFSET, Q = FromQuery(10), FromQuery(0), FromQuery("")


@get("/items")
async def items(limit: FromQuery[int] = LIMIT, offset: FromQuery[int] = OFFSET, q: FromQuery[str] = Q):
    return json({"limit": limit.value, "offset": offset.value, "q": q.value})
