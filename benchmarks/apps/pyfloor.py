"""The Python floor: a raw uvloop Protocol, httptools parsing, one fixed response.

One Python callback per request (on_message_complete); the responses for everything
parsed from one read go out in one write. Nothing here routes or serialises, so
every path (and the JSON cell) gets the same plaintext response: it is the cost of
crossing into Python once per request, not a framework.
"""

import asyncio
import os
from typing import Any

import httptools
import uvloop

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 13\r\n\r\nHello, World!"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class FloorProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: Any = None  # uvloop's TCPTransport does not subclass asyncio.Transport
        self.parser = httptools.HttpRequestParser(self)
        self.ready = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.write(RESPONSE * self.ready + BAD_REQUEST)
            self.transport.close()
            return
        if self.ready:
            self.transport.write(RESPONSE * self.ready)
            self.ready = 0

    def on_message_complete(self) -> None:
        self.ready += 1


async def main() -> None:
    loop = asyncio.get_running_loop()
    port = int(os.environ["PORT"])
    server = await loop.create_server(FloorProtocol, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uvloop.run(main())
