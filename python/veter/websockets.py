"""WebSockets (RFC 6455): ``@app.websocket("/ws")`` handlers and the ``WebSocket``
they are given.

The handshake is an ordinary GET routed by the core; its handler starts here,
runs the application's handler as its own task, and answers with what that
handler decided: ``await ws.accept()`` sends ``101 Switching Protocols`` and the
connection changes hands (frames are parsed, unmasked, joined, checked and
answered in Rust, ``veter._core.WebSocketProtocol``); ``await ws.close()``
before accepting refuses the handshake with 403. Middleware sees the handshake
like any request (its answer is the ``101``, a streamed response without body).

Limits come from the server settings (``ws_*``, see docs/websockets.md) unless
the route sets its own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import orjson

from veter import _core
from veter.responses import AnyResponse, Response
from veter.streaming import StreamingResponse

if TYPE_CHECKING:
    from veter._core import Request, StreamWriter
    from veter.config import ServerConfig

__all__ = ["WebSocket", "WebSocketDisconnect", "WebSocketSettings"]

log = logging.getLogger("veter.websocket")

#: RFC 6455 section 1.3: appended to the client's key before hashing.
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

WebSocketHandler = Callable[..., Awaitable[None]]


class WebSocketDisconnect(Exception):
    """The connection is closed: ``code`` and ``reason`` say why (the peer's close
    frame, the code this side sent or failed with, or 1006 when it was lost)."""

    def __init__(self, code: int = 1000, reason: str = "") -> None:
        super().__init__(code, reason)
        self.code = code
        self.reason = reason

    def __str__(self) -> str:
        return f"WebSocket closed ({self.code}{': ' + self.reason if self.reason else ''})"


@dataclass(frozen=True)
class WebSocketSettings:
    """Limits and timers of one WebSocket route (None: the server setting)."""

    max_message_size: int | None = None
    max_queue: int | None = None
    ping_interval: float | None = None
    ping_timeout: float | None = None
    close_timeout: float | None = None
    #: Offer permessage-deflate to clients that ask for it.
    deflate: bool | None = None
    #: The server's largest compression window, 9-15 (2**bits bytes).
    deflate_window_bits: int | None = None
    #: zlib level, 1 (fastest) to 9 (smallest).
    deflate_level: int | None = None
    #: Messages shorter than this many bytes are sent uncompressed.
    deflate_min_size: int | None = None

    def check(self) -> None:
        """Raises ValueError naming the first setting out of its range."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name == "deflate":
                continue
            if not value >= 0:
                raise ValueError(f"{f.name} must be >= 0, got {value!r}")
        if self.deflate_window_bits is not None and not 9 <= self.deflate_window_bits <= 15:
            raise ValueError(f"deflate_window_bits must be 9 to 15, got {self.deflate_window_bits}")
        if self.deflate_level is not None and not 1 <= self.deflate_level <= 9:
            raise ValueError(f"deflate_level must be 1 to 9, got {self.deflate_level}")

    def resolved(self, config: ServerConfig) -> WebSocketSettings:
        """Every None replaced by the server's ``ws_*`` setting."""
        changes = {
            f.name: getattr(config, "ws_" + f.name) for f in fields(self) if getattr(self, f.name) is None
        }
        return replace(self, **changes)


class WebSocket:
    """One WebSocket connection, as its handler sees it.

    Before ``accept()`` it is a handshake: the request's path, headers, query and
    id are here. After it: ``receive()`` (or ``receive_text/bytes/json``, or
    ``async for message in ws``) and ``send()`` (``send_text/bytes/json``), and
    ``close()``. A closed connection raises ``WebSocketDisconnect`` from receive
    and send (iteration just stops).
    """

    def __init__(self, request: Request, settings: WebSocketSettings, sessions: Sessions) -> None:
        self.request = request
        self.settings = settings
        self._protocol = _core.WebSocketProtocol(
            WebSocketDisconnect,
            max_message=_int(settings.max_message_size),
            max_queue=_int(settings.max_queue),
            deflate=bool(settings.deflate),
            deflate_window_bits=_int(settings.deflate_window_bits),
            deflate_level=_int(settings.deflate_level),
            deflate_min_size=_int(settings.deflate_min_size),
        )
        self._loop = asyncio.get_running_loop()
        self._decision: asyncio.Future[AnyResponse] = self._loop.create_future()
        #: Done when the 101 is written and the connection changed hands (or never will).
        self._attached: asyncio.Future[None] = self._loop.create_future()
        self._accepted = False
        self._keepalive: asyncio.Task[None] | None = None
        self._sessions = sessions
        self.subprotocol: str | None = None
        #: The ``Sec-WebSocket-Extensions`` of the ``101`` (permessage-deflate when
        #: agreed), or None: set by ``accept()``.
        self.extensions: str | None = None

    # -- the handshake -------------------------------------------------------

    @property
    def path(self) -> str:
        return self.request.path

    @property
    def headers(self) -> Any:
        return self.request.headers

    @property
    def query(self) -> Any:
        return self.request.query

    @property
    def path_params(self) -> dict[str, Any]:
        return dict(self.request.path_params)

    @property
    def id(self) -> str | None:
        """The request id of the handshake."""
        return self.request.id

    @property
    def app(self) -> Any:
        return self.request.app

    @property
    def subprotocols(self) -> list[str]:
        """The subprotocols the client offered, in its order of preference."""
        offered = self.request.headers.get("sec-websocket-protocol") or ""
        return [p.strip() for p in offered.split(",") if p.strip()]

    async def accept(
        self,
        subprotocol: str | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    ) -> None:
        """Accept the handshake (send ``101``), choosing ``subprotocol`` among those
        the client offered; ``headers`` are added to the ``101``."""
        if self._accepted:
            raise RuntimeError("this WebSocket was already accepted")
        if self._decision.done():
            raise WebSocketDisconnect(1006, "the handshake was already answered")
        if subprotocol is not None and subprotocol not in self.subprotocols:
            raise ValueError(f"subprotocol {subprotocol!r} was not offered by the client")
        key = self.request.headers.get("sec-websocket-key") or ""
        accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
        extra = list(headers.items() if isinstance(headers, Mapping) else (headers or ()))
        out = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)]
        if subprotocol is not None:
            out.append(("Sec-WebSocket-Protocol", subprotocol))
            self.subprotocol = subprotocol
        offers = self.request.headers.getall("sec-websocket-extensions", [])
        if offers and not any(str(n).lower() == "sec-websocket-extensions" for n, _ in extra):
            agreed = self._protocol.negotiate(", ".join(offers))
            if agreed is not None:
                out.append(("Sec-WebSocket-Extensions", agreed))
                self.extensions = agreed
        out.extend((str(n), str(v)) for n, v in extra)
        self._accepted = True
        self._decision.set_result(_Upgrade(self, out))
        await self._attached
        if self._protocol.lost:
            raise WebSocketDisconnect(1006, "the client left during the handshake")
        if self.settings.ping_interval:
            self._keepalive = self._loop.create_task(self._ping_forever())

    # -- messages ------------------------------------------------------------

    async def receive(self) -> str | bytes:
        """The next message: ``str`` for text, ``bytes`` for binary."""
        self._require_accepted()
        waiter: asyncio.Future[str | bytes] = self._loop.create_future()
        message = self._protocol.receive(waiter)
        if message is None:
            return await waiter
        return message

    async def receive_text(self) -> str:
        message = await self.receive()
        if not isinstance(message, str):
            raise TypeError("expected a text message, got a binary one")
        return message

    async def receive_bytes(self) -> bytes:
        message = await self.receive()
        if not isinstance(message, bytes):
            raise TypeError("expected a binary message, got a text one")
        return message

    async def receive_json(self) -> Any:
        """The next message (text or binary) parsed as JSON."""
        return orjson.loads(await self.receive())

    async def send(self, data: str | bytes) -> None:
        """Send ``str`` as a text message, ``bytes`` as a binary one; waits while
        the client is behind (the transport above its high watermark)."""
        if not self._accepted:
            self._require_accepted()
        if self._protocol.send(data):
            await self._drained()

    async def send_text(self, data: str) -> None:
        if not isinstance(data, str):
            raise TypeError(f"send_text takes str, not {type(data).__name__}")
        await self.send(data)

    async def send_bytes(self, data: bytes) -> None:
        if isinstance(data, str):
            raise TypeError("send_bytes takes bytes, not str")
        await self.send(data)

    async def send_json(self, data: Any, *, binary: bool = False) -> None:
        """Send ``data`` as JSON, in a text message (or binary with ``binary=True``)."""
        self._require_accepted()
        if self._protocol.send(orjson.dumps(data), text=not binary):
            await self._drained()

    async def ping(self, data: bytes = b"") -> None:
        self._require_accepted()
        self._protocol.ping(data)

    def __aiter__(self) -> WebSocket:
        return self

    def __anext__(self) -> Awaitable[str | bytes]:
        # No coroutine per message: the core answers with the message, or a
        # future it parks, and ends the iteration (StopAsyncIteration) when the
        # connection is closed, as ``receive()`` would raise WebSocketDisconnect.
        if not self._accepted:
            raise RuntimeError("accept() the WebSocket before receiving or sending")
        return self._protocol.anext(self._loop.create_future)

    # -- closing -------------------------------------------------------------

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close with ``code`` and ``reason``: waits (``close_timeout``) for the
        peer's close frame, then drops the connection. Before ``accept()`` it
        refuses the handshake with 403."""
        if not self._accepted:
            self.refuse()
            return
        self._protocol.close(code, reason)
        await self._closed(_float(self.settings.close_timeout))

    def refuse(self, answer: AnyResponse | None = None) -> None:
        """Refuse the handshake with ``answer`` (403 by default); nothing once it
        has been answered."""
        if self._accepted or self._decision.done():
            return
        self._decision.set_result(answer or Response("WebSocket handshake refused", status=403))

    @property
    def close_code(self) -> int | None:
        """None while open; then the close code (see WebSocketDisconnect)."""
        return self._protocol.close_code

    @property
    def close_reason(self) -> str:
        return self._protocol.close_reason

    @property
    def closed(self) -> bool:
        """True once a close frame was sent or received, or the connection is gone."""
        return self._protocol.closing

    # -- internals -----------------------------------------------------------

    def _settle_attach(self) -> None:
        if not self._attached.done():
            self._attached.set_result(None)

    def _require_accepted(self) -> None:
        if not self._accepted:
            raise RuntimeError("accept() the WebSocket before receiving or sending")

    async def _drained(self) -> None:
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._protocol.wait_writable(waiter)
        await waiter

    async def _closed(self, grace: float) -> None:
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._protocol.wait_closed(waiter)
        try:
            await asyncio.wait_for(waiter, grace)
        except TimeoutError:
            self._protocol.abort()

    async def _ping_forever(self) -> None:
        interval = _float(self.settings.ping_interval)
        timeout = _float(self.settings.ping_timeout)
        protocol = self._protocol
        while not protocol.closing:
            await asyncio.sleep(interval)
            if protocol.closing:
                return
            if not protocol.attached:
                continue
            pongs = protocol.pongs
            protocol.ping(b"")
            if not timeout:
                continue
            await asyncio.sleep(timeout)
            if protocol.pongs == pongs and not protocol.closing:
                log.info("WebSocket %s: no pong within %.1f s; closing", self.path, timeout)
                protocol.close(1011, "keepalive ping timeout")
                await self._closed(_float(self.settings.close_timeout))
                return

    async def _run(self, handler: WebSocketHandler, params: dict[str, Any]) -> None:
        """The application's handler, as the connection's own task."""
        try:
            await handler(self, **params)
        except WebSocketDisconnect:
            pass
        except Exception as exc:
            if not self._decision.done():
                self._decision.set_exception(exc)  # the handshake's answer: a 500
                return
            log.exception("WebSocket handler for %s failed; closing with 1011", self.path)
            self._protocol.close(1011, "internal error")
        finally:
            if not self._decision.done():
                # The handler ended without accepting: the handshake is refused.
                self._decision.set_result(Response("WebSocket handshake refused", status=403))
            if self._keepalive is not None:
                self._keepalive.cancel()
        if self._accepted and not self._protocol.lost:
            await self.close()


class _Upgrade(StreamingResponse, _core.Upgrade):
    """The ``101`` of an accepted handshake; starting it hands the connection over."""

    def __init__(self, ws: WebSocket, headers: list[tuple[str, str]]) -> None:
        super().__init__((), status=101, headers=headers, content_type=None)
        self._ws = ws

    def _veter_start(self, writer: StreamWriter, send_body: bool) -> asyncio.Task[None] | None:
        try:
            writer.upgrade(self._ws._protocol)
        except ConnectionError:
            self._ws._protocol._abandon()
        finally:
            self._ws._settle_attach()
        return None

    def _veter_abandon(self) -> None:
        self._ws._protocol._abandon()
        self._ws._settle_attach()


class Sessions:
    """The WebSocket connections of an app, closed with 1001 when the server stops."""

    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[None], WebSocket] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, ws: WebSocket, handler: WebSocketHandler, params: dict[str, Any]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(ws._run(handler, params))
        self._tasks[task] = ws
        task.add_done_callback(self._tasks.pop)
        return task

    async def close_all(self, budget: float) -> None:
        """Close every open connection (1001), wait for the close handshakes, then
        give the handlers their ``close_timeout`` to finish, all within ``budget`` seconds;
        handlers still running then are cancelled."""
        if not self._tasks:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(budget, 0.0)
        sockets = list(self._tasks.values())
        closed = []
        for ws in sockets:
            if ws._accepted and not ws._protocol.closing:
                ws._protocol.close(1001, "server shutting down")
            closed.append(loop.create_task(ws._closed(_float(ws.settings.close_timeout))))
        await asyncio.wait(closed, timeout=max(deadline - loop.time(), 0.0))
        grace = max((_float(ws.settings.close_timeout) for ws in sockets), default=0.0)
        tasks = list(self._tasks)
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=max(min(grace, deadline - loop.time()), 0.0))
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        for ws in sockets:
            ws._protocol.abort()
        for task in closed:
            task.cancel()


def handshake_problem(request: Request) -> Response | None:
    """Why ``request`` is not a WebSocket handshake veter can accept (RFC 6455
    section 4.2.1), as the answer to send; None when it is one."""
    headers = request.headers
    upgrade = _tokens(headers.getall("upgrade", []))
    connection = _tokens(headers.getall("connection", []))
    if "websocket" not in upgrade or "upgrade" not in connection:
        return Response(
            "this resource speaks WebSocket only",
            status=426,
            headers={"Upgrade": "websocket", "Sec-WebSocket-Version": "13"},
        )
    # HTTP/2's extended CONNECT (RFC 8441) reaches the route as this same handshake.
    if request.http_version not in ("1.1", "2"):
        return Response("a WebSocket handshake needs HTTP/1.1 or HTTP/2", status=400)
    if "close" in connection:
        return Response("a WebSocket handshake cannot close its connection", status=400)
    if request.method != "GET":
        return Response("a WebSocket handshake is a GET", status=400)
    versions = headers.getall("sec-websocket-version", [])
    if versions != ["13"]:
        return Response(
            "unsupported WebSocket version (13 only)", status=426, headers={"Sec-WebSocket-Version": "13"}
        )
    keys = headers.getall("sec-websocket-key", [])
    if len(keys) != 1 or not _valid_key(keys[0]):
        return Response("missing or invalid Sec-WebSocket-Key", status=400)
    return None


def entry_for(
    handler: WebSocketHandler,
    settings: WebSocketSettings,
    config: Callable[[], ServerConfig],
    sessions: Sessions,
) -> Callable[..., Awaitable[AnyResponse]]:
    """What the core calls for a WebSocket route's handshake."""
    resolved: list[WebSocketSettings] = []

    async def websocket_handshake(request: Request, **params: Any) -> AnyResponse:
        problem = handshake_problem(request)
        if problem is not None:
            return problem
        if request.app.draining:
            return Response("server shutting down", status=503)
        if not resolved:
            resolved.append(settings.resolved(config()))
        ws = WebSocket(request, resolved[0], sessions)
        task = sessions.start(ws, handler, params)
        try:
            return await ws._decision
        except asyncio.CancelledError:
            # The handshake ran past the request deadline: the handler goes too.
            task.cancel()
            raise

    websocket_handshake.__qualname__ = getattr(handler, "__qualname__", "websocket_handshake")
    return websocket_handshake


def _tokens(values: list[str]) -> set[str]:
    return {t.strip().lower() for v in values for t in v.split(",") if t.strip()}


def _valid_key(key: str) -> bool:
    try:
        return len(base64.b64decode(key.strip(), validate=True)) == 16
    except (binascii.Error, ValueError):
        return False


def _int(value: int | None) -> int:
    assert value is not None  # resolved from the server settings
    return value


def _float(value: float | None) -> float:
    assert value is not None  # resolved from the server settings
    return value
