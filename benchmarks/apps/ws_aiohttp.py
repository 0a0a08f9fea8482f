"""aiohttp on uvloop, WebSocket echo with web.WebSocketResponse, for the ws scenario;
started with web.run_app, access log off. `/` answers plain HTTP for the readiness check."""

import os

import uvloop
from aiohttp import WSMsgType, web


async def plaintext(request):
    return web.Response(text="Hello, World!")


async def echo(request):
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for msg in ws:
        if msg.type == WSMsgType.TEXT:
            await ws.send_str(msg.data)
        elif msg.type == WSMsgType.BINARY:
            await ws.send_bytes(msg.data)
    return ws


def make_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/", plaintext)
    app.router.add_get("/ws", echo)
    return app


if __name__ == "__main__":
    web.run_app(
        make_app(),
        host="127.0.0.1",
        port=int(os.environ["PORT"]),
        access_log=None,
        loop=uvloop.new_event_loop(),
        print=None,
    )
