"""Apps that tests/e2e/test_http2_features.py runs in a process of their own
(``veter run``): a native app (``app``) with a handler held until the test lets it
go, and the browser's page served by each front end (``app``, ``asgi``, ``wsgi``):
it fetches ``/n/0`` .. ``/n/19`` at once and reports what came back."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import veter
from veter import health

PAGE = b"""<!doctype html>
<meta charset="utf-8">
<title>veter HTTP/2</title>
<script>
Promise.all([...Array(20).keys()].map((i) => fetch(`/n/${i}`).then((r) => r.json())))
  .then((answers) => {
    const protocols = performance.getEntriesByType("resource")
      .filter((e) => new URL(e.name).pathname.startsWith("/n/"))
      .map((e) => e.nextHopProtocol);
    window.result = {answers, protocols, page: performance.getEntriesByType("navigation")[0].nextHopProtocol};
  })
  .catch((error) => { window.result = {error: String(error)}; });
</script>
"""


def number(path: str) -> bytes:
    """The JSON answer to ``/n/<i>``."""
    return json.dumps({"i": int(path.removeprefix("/n/")), "pid": os.getpid()}).encode()


app = veter.App()
health.enable(app)


@app.get("/")
def index(request: veter.Request) -> str:
    return "hello"


@app.post("/echo")
async def echo(request: veter.Request) -> bytes:
    return await request.body()


@app.get("/held")
async def held(request: veter.Request) -> str:
    """Creates the file ?mark= (the test knows the handler runs), then answers once
    the file ?release= exists."""
    # Blocking calls on the loop, but on an empty file in a test's temporary directory.
    with open(request.query["mark"], "w"):  # noqa: ASYNC230
        pass
    while not os.path.exists(request.query["release"]):  # noqa: ASYNC110, ASYNC240 - the test makes it
        await asyncio.sleep(0.01)
    return "released"


@app.get("/page")
def page(request: veter.Request) -> veter.Response:
    return veter.Response(PAGE, content_type="text/html; charset=utf-8")


@app.get("/n/{i:int}")
def numbered(request: veter.Request, i: int) -> veter.Response:
    return veter.Response(number(f"/n/{i}"), content_type="application/json")


Send = Callable[[dict[str, Any]], Awaitable[None]]


async def asgi(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]], send: Send) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/page":
        body, kind = PAGE, b"text/html; charset=utf-8"
    elif path.startswith("/n/"):
        body, kind = number(path), b"application/json"
    else:
        body, kind = b"not here", b"text/plain"
    status = 404 if kind == b"text/plain" else 200
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
    await send({"type": "http.response.body", "body": body})


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ["PATH_INFO"]
    if path == "/page":
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [PAGE]
    if path.startswith("/n/"):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [number(path)]
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not here"]
