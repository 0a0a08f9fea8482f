"""A hosted ASGI app's WebSockets (ASGI WebSocket spec 2.4) on veter's own.

The core sends a hosted app's WebSocket handshakes here with their ``websocket``
scope (built in Rust, ``src/asgi/scope.rs``), as it sends a ``veter.App``'s to a
WebSocket route: the handshake, the ``101``, the frames (parsed, unmasked, checked,
compressed in Rust), keep-alive pings, limits and the ``1001`` of a graceful stop
are ``veter.websockets``'. This module only translates: the app's ``receive`` and
``send`` messages to and from a ``veter.websockets.WebSocket``.

- ``websocket.connect`` is the first message; ``websocket.accept`` (subprotocol,
  headers) sends the ``101``; ``websocket.close`` before it refuses the handshake
  (403), as does an app that returns without accepting; ``websocket.http.response.*``
  before it refuses with the app's own answer (the denial extension).
- After it: ``websocket.receive`` (``text`` or ``bytes``), ``websocket.send``,
  ``websocket.close`` (code, reason), and ``websocket.disconnect`` (code, reason)
  once the connection is closed; a ``send`` after that raises ``WebSocketClosed``
  (an ``OSError``, as the spec asks).
- An exception before accepting answers 500; after, the connection closes with 1011.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from veter.responses import AnyResponse, Response
from veter.websockets import WebSocket, WebSocketDisconnect

__all__ = ["WebSocketClosed", "serve"]

Message = MutableMapping[str, Any]
AsgiCallable = Callable[..., Awaitable[None]]


class WebSocketClosed(OSError):
    """``send`` on a WebSocket that is closed (ASGI: a subclass of ``OSError``)."""


async def serve(app: AsgiCallable, ws: WebSocket, scope: Message) -> None:
    """Runs ``app`` on one handshake (what ``veter.websockets`` runs as the handler)."""
    socket = _Socket(ws)
    await app(scope, socket.receive, socket.send)


class _Socket:
    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.told_connect = False
        self.accepted = False
        self.closed: WebSocketDisconnect | None = None
        self.denial: tuple[int, list[tuple[str, str]]] | None = None
        self.denial_body: list[bytes] = []
        #: Set once the handshake is answered (accepted or refused): a receive()
        #: made before it waits (Quart receives while its handler has yet to accept).
        self.answered = asyncio.Event()

    async def receive(self) -> Message:
        if not self.told_connect:
            self.told_connect = True
            return {"type": "websocket.connect"}
        if self.closed is None and not self.accepted:
            await self.answered.wait()
        if self.closed is None:
            try:
                data = await self.ws.receive()
            except WebSocketDisconnect as exc:
                self.closed = exc
            else:
                if isinstance(data, str):
                    return {"type": "websocket.receive", "text": data}
                return {"type": "websocket.receive", "bytes": data}
        return {"type": "websocket.disconnect", "code": self.closed.code, "reason": self.closed.reason}

    async def send(self, message: Message) -> None:
        kind = message.get("type") if isinstance(message, MutableMapping) else None
        if kind == "websocket.send":
            await self._send_data(message)
        elif kind == "websocket.accept":
            await self._accept(message)
        elif kind == "websocket.close":
            await self._close(message)
        elif kind == "websocket.http.response.start":
            self._deny_start(message)
        elif kind == "websocket.http.response.body":
            self._deny_body(message)
        else:
            raise RuntimeError(f"ASGI send() of {kind!r}: not a message a websocket scope can send")

    async def _accept(self, message: Message) -> None:
        if self.accepted or self.closed is not None or self.denial is not None:
            raise RuntimeError("ASGI websocket.accept after the handshake was answered")
        headers = [(_text(n), _text(v)) for n, v in message.get("headers") or ()]
        self.accepted = True
        try:
            await self.ws.accept(message.get("subprotocol"), headers)
        except WebSocketDisconnect as exc:
            self.closed = exc
        finally:
            self.answered.set()

    async def _send_data(self, message: Message) -> None:
        if not self.accepted:
            raise RuntimeError("ASGI websocket.send before websocket.accept")
        if self.closed is not None:
            raise WebSocketClosed(f"the WebSocket is closed ({self.closed.code})")
        text, data = message.get("text"), message.get("bytes")
        payload: str | bytes
        if text is not None and data is None:
            payload = str(text)
        elif data is not None and text is None:
            payload = bytes(data)
        else:
            raise RuntimeError("ASGI websocket.send needs exactly one of 'text' and 'bytes'")
        try:
            await self.ws.send(payload)
        except WebSocketDisconnect as exc:
            self.closed = exc
            raise WebSocketClosed(f"the WebSocket is closed ({exc.code})") from None

    async def _close(self, message: Message) -> None:
        if not self.accepted:
            if self.denial is not None:
                raise RuntimeError("ASGI websocket.close during a denial response")
            self.closed = WebSocketDisconnect(1006, "the handshake was refused")
            self.answered.set()
            await self.ws.close()  # before accepting: 403
            return
        if self.closed is not None:
            return
        code = message.get("code") or 1000
        reason = message.get("reason") or ""
        self.closed = WebSocketDisconnect(code, reason)
        await self.ws.close(code, reason)

    def _deny_start(self, message: Message) -> None:
        if self.accepted or self.closed is not None or self.denial is not None:
            raise RuntimeError("ASGI websocket.http.response.start after the handshake was answered")
        status = message.get("status")
        if not isinstance(status, int) or not 100 <= status <= 599 or status == 101:
            raise RuntimeError(f"ASGI websocket.http.response.start: invalid status {status!r}")
        self.denial = (status, [(_text(n), _text(v)) for n, v in message.get("headers") or ()])

    def _deny_body(self, message: Message) -> None:
        if self.denial is None:
            raise RuntimeError("ASGI websocket.http.response.body before websocket.http.response.start")
        if self.closed is not None:
            raise RuntimeError("ASGI websocket.http.response.body after the denial was complete")
        self.denial_body.append(bytes(message.get("body") or b""))
        if not message.get("more_body"):
            status, headers = self.denial
            self.closed = WebSocketDisconnect(1006, "the handshake was refused")
            self.answered.set()
            answer: AnyResponse = Response(
                b"".join(self.denial_body), status=status, headers=headers, content_type=None
            )
            self.ws.refuse(answer)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)
