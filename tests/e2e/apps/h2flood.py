"""The app the HTTP/2 flood tests attack (tests/e2e/test_http2_floods.py), run as a
real `veter run` process so that its worker's memory can be measured."""

from collections.abc import AsyncIterator

import veter

app = veter.App()

PIECE = b"x" * 65536


@app.get("/")
def hello(request: veter.Request) -> str:
    return "hello"


@app.get("/big")
async def big(request: veter.Request) -> veter.StreamingResponse:
    """64 MiB in 64 KiB pieces: a streamed answer, which waits while its writer is paused."""

    async def body() -> AsyncIterator[bytes]:
        for _ in range(1024):
            yield PIECE

    return veter.StreamingResponse(body())


@app.post("/sink")
async def sink(request: veter.Request) -> str:
    """Reads the whole body: its stream stays open until the client ends it."""
    return str(len(await request.body()))
