"""veter's own `async def` handlers on the raw ASGI app's routes: the reference for
hosting an ASGI app (asgi scenario). On Python 3.11 each request of an `async def`
handler runs as an asyncio task, as a hosted ASGI app's does; what the hosted app
costs beyond this is the ASGI front end (scope, receive, send)."""

import json

import veter

app = veter.App()


@app.get("/")
async def plaintext(request):
    return "Hello, World!"


@app.get("/json")
async def json_(request):
    # Serialised per request with the stdlib, as the raw ASGI app does.
    return veter.Response(json.dumps({"message": "Hello, World!"}), content_type="application/json")
