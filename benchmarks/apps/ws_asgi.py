"""A raw ASGI WebSocket echo (no framework), for uvicorn in the ws scenario; `/` answers
plain HTTP for the readiness check."""

HELLO = b"Hello, World!"
TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": TEXT_HEADERS})
        await send({"type": "http.response.body", "body": HELLO})
        return
    if scope["type"] != "websocket":
        return
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    while True:
        event = await receive()
        if event["type"] == "websocket.disconnect":
            return
        if event.get("text") is not None:
            await send({"type": "websocket.send", "text": event["text"]})
        else:
            await send({"type": "websocket.send", "bytes": event["bytes"]})
