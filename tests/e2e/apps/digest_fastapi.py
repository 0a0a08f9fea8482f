"""tests/e2e/apps/digest.py's answers from a FastAPI app (served as ASGI)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

from .digest import answer

app = FastAPI()


@app.api_route("/", methods=["GET", "POST"])
async def digest(request: Request) -> PlainTextResponse:
    body = await request.body()
    assert request.client is not None
    status, text, headers = answer(
        request.query_params.get("i", ""),
        body,
        request.headers.get("x-body-sha256"),
        request.scope["http_version"],
        request.headers.get("connection"),
        request.headers.get("x-forwarded-for"),
        request.client.port,
    )
    return PlainTextResponse(text, status_code=status, headers=headers)
