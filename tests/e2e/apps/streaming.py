"""An app for streaming tests run as a real `veter run` process."""

from collections.abc import AsyncIterator

import veter

app = veter.App()

PIECE = b"x" * 65536


@app.get("/bytes/{n:int}")
async def many_bytes(request: veter.Request, n: int) -> veter.StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(n // len(PIECE)):
            yield PIECE

    return veter.StreamingResponse(body())


@app.get("/rss")
def rss(request: veter.Request) -> str:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return line.split()[1]
    return "0"
