"""Testing apps without sockets.

``TestClient(app)`` feeds requests to the same Rust protocol the server uses, over an
in-memory transport, on an event loop of its own, so plain (sync) pytest tests work::

    with TestClient(app) as client:          # runs startup/shutdown hooks
        assert client.get("/items/1").json() == {"id": 1}

``AsyncTestClient`` does the same on the running loop, for async tests.
``client.websocket_connect(path)`` opens a WebSocket to a ``@app.websocket`` route
(see ``veter.testing_websocket``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

import orjson

from veter import _core, background
from veter.app import App
from veter.config import ServerConfig
from veter.datastructures import Headers
from veter.loops import loop_factory
from veter.testing_forms import Files, encode_form
from veter.testing_websocket import AsyncTestWebSocket, TestWebSocket, WebSocketRejected, handshake_request

__all__ = [
    "AsyncTestClient",
    "AsyncTestWebSocket",
    "MemoryTransport",
    "TestClient",
    "TestResponse",
    "TestWebSocket",
    "WebSocketRejected",
]

DEFAULT_TIMEOUT = 30.0


class TestResponse:
    """A response as the client received it."""

    __test__ = False  # not a pytest test class

    def __init__(self, status: int, reason: str, headers: list[tuple[str, str]], content: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = Headers(headers)
        self.content = content

    @property
    def status_code(self) -> int:
        return self.status

    @property
    def text(self) -> str:
        return self.content.decode("utf-8")

    def json(self) -> Any:
        return orjson.loads(self.content)

    @property
    def cookies(self) -> dict[str, str]:
        """What the response's ``Set-Cookie`` headers set, name to value (a deleted
        cookie maps to ''; the last header of a name wins)."""
        pairs = (value.split(";", 1)[0].partition("=") for value in self.headers.getall("set-cookie"))
        return {name.strip(): value.strip() for name, _, value in pairs}

    def __repr__(self) -> str:
        return f"<TestResponse {self.status} {self.reason} {len(self.content)} bytes>"


class _ResponseReader:
    """Parses one response from bytes the protocol wrote (the test's own parser:
    it trusts the server and only needs Content-Length, chunked or close framing)."""

    def __init__(self, head_request: bool, *, upgrade: bool = False) -> None:
        self.head_request = head_request
        self.upgrade = upgrade

    def parse(self, data: bytes, closed: bool) -> tuple[TestResponse, int] | None:
        start = 0
        while True:
            end = data.find(b"\r\n\r\n", start)
            if end < 0:
                return None
            lines = data[start:end].decode("latin-1").split("\r\n")
            _version, status_text, *rest = lines[0].split(" ", 2)
            status = int(status_text)
            headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
            pairs: list[tuple[str, str]] = [(h[0], h[1]) for h in headers if len(h) == 2]
            body_start = end + 4
            if status == 101 and self.upgrade:
                return TestResponse(status, rest[0] if rest else "", pairs, b""), body_start
            if 100 <= status < 200:
                start = body_start  # interim response (100 Continue): skip it
                continue
            break
        reason = rest[0] if rest else ""
        lookup = Headers(pairs)
        if self.head_request or status in (204, 304):
            return TestResponse(status, reason, pairs, b""), body_start
        if "content-length" in lookup:
            length = int(lookup["content-length"])
            if len(data) - body_start < length:
                return None
            return TestResponse(
                status, reason, pairs, data[body_start : body_start + length]
            ), body_start + length
        if lookup.get("transfer-encoding", "").lower() == "chunked":
            return self._chunked(data, body_start, status, reason, pairs)
        if not closed:
            return None
        return TestResponse(status, reason, pairs, data[body_start:]), len(data)

    @staticmethod
    def _chunked(
        data: bytes, pos: int, status: int, reason: str, pairs: list[tuple[str, str]]
    ) -> tuple[TestResponse, int] | None:
        body = bytearray()
        while True:
            line_end = data.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(data[pos:line_end].split(b";")[0], 16)
            pos = line_end + 2
            if size == 0:
                trailer_end = data.find(b"\r\n\r\n", pos - 2)
                if trailer_end < 0:
                    return None
                return TestResponse(status, reason, pairs, bytes(body)), trailer_end + 4
            if len(data) < pos + size + 2:
                return None
            body += data[pos : pos + size]
            pos += size + 2


class MemoryTransport(asyncio.Transport):
    """An asyncio transport that keeps what the protocol writes in memory."""

    def __init__(self, protocol: Any, client: tuple[str, int] | str) -> None:
        super().__init__()
        self._protocol = protocol  # veter's Connection, then its WebSocketProtocol
        self._loop = asyncio.get_running_loop()
        self.data = bytearray()
        self.closed = False
        self.reading = True
        self._changed = asyncio.Event()
        self._extra: dict[str, Any] = {"peername": client, "sockname": ("testserver", 80)}

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closed:
            return
        self.data += data
        self._changed.set()

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._changed.set()
            self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._extra.get(name, default)

    def set_protocol(self, protocol: Any) -> None:
        self._protocol = protocol

    def get_protocol(self) -> Any:
        return self._protocol

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def get_write_buffer_size(self) -> int:
        return 0

    async def changed(self) -> None:
        await self._changed.wait()
        self._changed.clear()


def _encode_request(
    method: str,
    path: str,
    headers: Mapping[str, str] | list[tuple[str, str]] | None,
    body: bytes | None,
) -> bytes:
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    names = {name.lower() for name, _ in pairs}
    if "host" not in names:
        pairs.insert(0, ("Host", "testserver"))
    if body is not None and "content-length" not in names and "transfer-encoding" not in names:
        pairs.append(("Content-Length", str(len(body))))
    lines = [f"{method} {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in pairs]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


class AsyncTestClient:
    """Drive ``app`` on the running loop: ``async with AsyncTestClient(app) as c: ...``."""

    def __init__(
        self,
        app: App,
        *,
        config: ServerConfig | None = None,
        client: tuple[str, int] | str = ("127.0.0.1", 50000),
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.app = app
        self.config = config or app.config
        self.client = client
        self.timeout = timeout
        self._dispatcher: _core.Dispatcher | None = None
        self._websockets: set[AsyncTestWebSocket] = set()

    async def __aenter__(self) -> AsyncTestClient:
        await self.app.startup()
        self._dispatcher = self.app.build_dispatcher(self.config)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # WebSockets a test left open go away like a client that vanished (1006).
        for ws in self._websockets:
            if ws.close_code is None:
                ws.close_code = 1006
                ws._transport.close()
        self._websockets.clear()
        await asyncio.sleep(0)  # let connection_lost run
        await self.app.websockets.close_all(self.timeout)
        await self.app.shutdown()

    @property
    def dispatcher(self) -> _core.Dispatcher:
        if self._dispatcher is None:
            self._dispatcher = self.app.build_dispatcher(self.config)
        return self._dispatcher

    async def send_raw(self, raw: bytes, *, head_request: bool = False) -> TestResponse:
        """Send exact request bytes on a new connection and read one response."""
        conn = self.dispatcher()
        transport = MemoryTransport(conn, self.client)
        conn.connection_made(transport)
        conn.data_received(raw)
        reader = _ResponseReader(head_request)
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    parsed = reader.parse(bytes(transport.data), transport.closed)
                    if parsed is not None:
                        # As a test expects: the background tasks of the request
                        # have run when its answer is handed back.
                        await background.wait_idle()
                        return parsed[0]
                    if transport.closed:
                        raise ConnectionError(
                            f"connection closed before a full response: {bytes(transport.data)!r}"
                        )
                    await transport.changed()
        finally:
            transport.close()
            await asyncio.sleep(0)  # let connection_lost run

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        files: Files | None = None,
    ) -> TestResponse:
        """``data=``/``files=`` send a form (urlencoded, or multipart with files; see
        ``veter.testing_forms``)."""
        if params:
            path = f"{path}{'&' if '?' in path else '?'}{urlencode(params, doseq=True)}"
        body: bytes | None = content.encode() if isinstance(content, str) else content
        if json is not None:
            body = orjson.dumps(json)
            extra = [("Content-Type", "application/json")]
            pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
            headers = pairs + extra
        if data is not None or files is not None:
            body, content_type = encode_form(data, files)
            pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
            headers = [*pairs, ("Content-Type", content_type)]
        raw = _encode_request(method.upper(), path, headers, body)
        return await self.send_raw(raw, head_request=method.upper() == "HEAD")

    async def get(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("GET", path, **kw)

    async def open_websocket(
        self,
        path: str,
        *,
        subprotocols: list[str] | None = None,
        headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
    ) -> AsyncTestWebSocket:
        """Do the opening handshake on a new connection; the open connection, or
        ``WebSocketRejected`` with the server's answer when it is not ``101``."""
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
        conn = self.dispatcher()
        transport = MemoryTransport(conn, self.client)
        conn.connection_made(transport)
        conn.data_received(handshake_request(path, pairs, subprotocols))
        reader = _ResponseReader(False, upgrade=True)
        async with asyncio.timeout(self.timeout):
            while (parsed := reader.parse(bytes(transport.data), transport.closed)) is None:
                if transport.closed:
                    raise ConnectionError(
                        f"connection closed before a full response: {bytes(transport.data)!r}"
                    )
                await transport.changed()
        response, offset = parsed
        if response.status != 101:
            transport.close()
            await asyncio.sleep(0)  # let connection_lost run
            raise WebSocketRejected(response)
        ws = AsyncTestWebSocket(transport, response, offset, self.timeout)
        self._websockets.add(ws)
        return ws

    @contextlib.asynccontextmanager
    async def websocket_connect(
        self,
        path: str,
        *,
        subprotocols: list[str] | None = None,
        headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
    ) -> AsyncIterator[AsyncTestWebSocket]:
        """``async with client.websocket_connect("/ws") as ws:``; closed (1000) on exit
        unless it is closed already."""
        ws = await self.open_websocket(path, subprotocols=subprotocols, headers=headers)
        try:
            yield ws
        finally:
            if ws.close_code is None:
                await ws.close()
            self._websockets.discard(ws)

    async def head(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("HEAD", path, **kw)

    async def post(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("POST", path, **kw)

    async def put(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("PUT", path, **kw)

    async def patch(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("PATCH", path, **kw)

    async def delete(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("DELETE", path, **kw)

    async def options(self, path: str, **kw: Any) -> TestResponse:
        return await self.request("OPTIONS", path, **kw)


class TestClient:
    """The sync test client: runs an event loop of its own for each call."""

    __test__ = False

    def __init__(self, app: App, **kwargs: Any) -> None:
        self._async = AsyncTestClient(app, **kwargs)
        self._runner: asyncio.Runner | None = None
        self._entered = False

    def _run(self, coro: Any) -> Any:
        if self._runner is None:
            self._runner = asyncio.Runner(loop_factory=loop_factory(self._async.config.loop))
        return self._runner.run(coro)

    def __enter__(self) -> TestClient:
        self._run(self._async.__aenter__())
        self._entered = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._entered:
                self._run(self._async.__aexit__(exc_type, exc, tb))
        finally:
            self.close()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __del__(self) -> None:
        self.close()

    def send_raw(self, raw: bytes, *, head_request: bool = False) -> TestResponse:
        result: TestResponse = self._run(self._async.send_raw(raw, head_request=head_request))
        return result

    def request(self, method: str, path: str, **kw: Any) -> TestResponse:
        result: TestResponse = self._run(self._async.request(method, path, **kw))
        return result

    def get(self, path: str, **kw: Any) -> TestResponse:
        return self.request("GET", path, **kw)

    def websocket_connect(
        self,
        path: str,
        *,
        subprotocols: list[str] | None = None,
        headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
    ) -> TestWebSocket:
        """``with client.websocket_connect("/ws") as ws:`` (``WebSocketRejected`` when the
        handshake is refused); closed (1000) on exit unless it is closed already."""

        def connect() -> Coroutine[Any, Any, AsyncTestWebSocket]:
            return self._async.open_websocket(path, subprotocols=subprotocols, headers=headers)

        return TestWebSocket(connect, self._run)

    def head(self, path: str, **kw: Any) -> TestResponse:
        return self.request("HEAD", path, **kw)

    def post(self, path: str, **kw: Any) -> TestResponse:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> TestResponse:
        return self.request("PUT", path, **kw)

    def patch(self, path: str, **kw: Any) -> TestResponse:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw: Any) -> TestResponse:
        return self.request("DELETE", path, **kw)

    def options(self, path: str, **kw: Any) -> TestResponse:
        return self.request("OPTIONS", path, **kw)
