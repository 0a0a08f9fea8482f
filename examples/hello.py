"""A small veter app: `make run`, then `curl http://127.0.0.1:8000/`."""

import asyncio

import veter

app = veter.App()


@app.get("/")
def plaintext(request: veter.Request) -> str:
    return "Hello, World!"


@app.get("/json")
def json_hello(request: veter.Request) -> dict[str, str]:
    return {"message": "Hello, World!"}


@app.get("/items/{item_id:int}")
async def item(request: veter.Request, item_id: int) -> dict[str, object]:
    return {"id": item_id, "q": request.query.get("q")}


@app.post("/echo")
async def echo(request: veter.Request) -> veter.Response:
    body = await request.body()
    return veter.Response(body, content_type=request.headers.get("content-type", "application/octet-stream"))


@app.get("/sleep")
async def sleep(request: veter.Request) -> str:
    await asyncio.sleep(float(request.query.get("s", "0.05")))
    return "slept"
