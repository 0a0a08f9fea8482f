"""veter, WebSocket echo, for the ws scenario (plus `/` for the readiness check).

Started from the repo root as `python -m veter run benchmarks.apps.ws_veter:app`.
"""

import veter

app = veter.App()


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.websocket("/ws")
async def echo(ws):
    await ws.accept()
    async for message in ws:
        await ws.send(message)
