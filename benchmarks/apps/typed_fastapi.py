"""The typed scenario on FastAPI (pydantic v2), served by uvicorn."""

from typing import Annotated

from fastapi import FastAPI, Query
from pydantic import BaseModel, Field

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


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


@app.post("/order")
async def order(order: Order) -> Order:
    return order


@app.get("/items")
async def items(limit: Annotated[int, Query(ge=1, le=100)] = 10, offset: int = 0, q: str = "") -> dict:
    return {"limit": limit, "offset": offset, "q": q}
