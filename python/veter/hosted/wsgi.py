"""``WsgiApp``: a WSGI app (PEP 3333: Flask, Django's ``get_wsgi_application()``...)
served by veter on its hosted ASGI path.

Each request comes from the core with its ``environ`` built already
(``Bridge.submit``; src/asgi/environ.rs) and its answer goes back to the
request's cycle in one hop; a body is read through the cycle's ``receive``, its
first piece taken on the loop. The app runs in a bounded pool of ``threads``
threads: the event loop never runs the app's code, so a blocking call (a
database driver, a sleep) holds one thread, not the worker.

An answer whose end the bridge knows (a list, or as many bytes as the app's
``Content-Length`` says) comes back to the loop in one hop and is written with a
``Content-Length``. Any other iterable is streamed: each block is handed to the
loop before the next is asked for, and the thread waits while the client is
behind (the core's write watermarks), as PEP 3333 asks. The iterable's
``close()`` is always called.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from veter import _core
from veter.app import App
from veter.hosted.asgi import AsgiApp
from veter.hosted.pathsend import send_range
from veter.hosted.wsgi_io import ErrorStream, FileWrapper, InputStream

__all__ = ["WsgiApp"]

log = logging.getLogger("veter.wsgi")

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]
StartResponse = Callable[..., Callable[[bytes], None]]
WsgiCallable = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class Bridge:
    """The thread pool the core hands a WSGI app's requests to (``submit``)."""

    def __init__(self, app: WsgiCallable) -> None:
        self.app = app
        self.errors = ErrorStream()
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        # What every environ has, whatever the request.
        self._static: dict[str, Any] = {
            "wsgi.version": (1, 0),
            "wsgi.errors": self.errors,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.file_wrapper": FileWrapper,
        }

    def template(self, root_path: str) -> dict[str, Any]:
        """The dict the core copies each environ from (it writes the request's own
        keys into the copy: src/asgi/environ.rs)."""
        return {"SCRIPT_NAME": root_path.encode().decode("latin-1"), **self._static}

    def start(self, threads: int) -> None:
        """Starts the pool's ``threads`` threads (called on the worker's loop)."""
        self._loop = asyncio.get_running_loop()
        for i in range(threads):
            thread = threading.Thread(target=self._work, name=f"veter-wsgi-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Ends the threads once they are idle. Requests have drained by now; a thread
        stuck in the app is not waited for (it is a daemon)."""
        for _ in self._threads:
            self._jobs.put(None)
        self._threads.clear()

    def _work(self) -> None:
        # One loop per thread; a job's outcome goes back to the loop in one call.
        # (Not run_in_executor: its two futures and their chained callbacks cost
        # more than the hop itself.)
        while (job := self._jobs.get()) is not None:
            settle, fail, context, call = job
            try:
                result = context.run(call.run)
            except BaseException as exc:  # noqa: BLE001 - the request's task raises it
                call.loop.call_soon_threadsafe(fail, exc)
            else:
                call.loop.call_soon_threadsafe(settle, result)

    def submit(self, environ: dict[str, Any], cycle: _core.AsgiCycle) -> None:
        """Runs the app on a request whose ``environ`` the core built: called by
        the core on the loop, in the request's context. The thread hands the
        answer to ``cycle`` (or streams it through its ``send``)."""
        loop = self._loop
        if loop is None or not self._threads:
            raise RuntimeError("the WSGI thread pool is not running (the server has stopped)")
        first = cycle.receive() if _has_body(environ) else None
        if isinstance(first, asyncio.Future) and not first.done():
            # The body's first piece is not in the core yet (its bytes come after
            # the head, in the same read or a later one): the job joins the pool
            # when it is, so no thread waits for it and none makes a trip for it.
            first.add_done_callback(functools.partial(self._body_arrived, environ, cycle, loop))
        else:
            self._queue(environ, cycle, first, loop)

    def _body_arrived(
        self,
        environ: dict[str, Any],
        cycle: _core.AsgiCycle,
        loop: asyncio.AbstractEventLoop,
        first: asyncio.Future[Message],
    ) -> None:
        try:
            failed = asyncio.CancelledError() if first.cancelled() else first.exception()
            if failed is not None:
                # The body failed before it began (over its limit, too slow): the
                # request ends as if the app had raised it, as a read would.
                cycle._wsgi_failed(failed)
                return
            self._queue(environ, cycle, first, loop)
        except BaseException as exc:  # noqa: BLE001 - the request answers it (500)
            cycle._wsgi_failed(exc)

    def _queue(
        self,
        environ: dict[str, Any],
        cycle: _core.AsgiCycle,
        first: Awaitable[Message] | None,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        if not self._threads:
            raise RuntimeError("the WSGI thread pool is not running (the server has stopped)")
        environ["wsgi.input"] = body = InputStream(cycle.receive, loop, first)
        call = Call(self.app, environ, body, cycle._veter_left, cycle.send, loop)
        self._jobs.put((cycle._wsgi_settled, cycle._wsgi_failed, contextvars.copy_context(), call))

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        """Never called by the core, which hands each request of a WSGI app to
        ``submit`` with the environ it built (``AsgiApp`` holds an ASGI callable:
        this one says so if anything else calls it)."""
        raise RuntimeError("a WSGI app is served through Bridge.submit, not as an ASGI app")


def _has_body(environ: dict[str, Any]) -> bool:
    if "HTTP_TRANSFER_ENCODING" in environ:
        # A chunked body has no length to read up to: its end is the stream's
        # (wsgi.input always ends there; with a Content-Length, frameworks read by
        # it, in sized reads, as PEP 3333 describes).
        environ["wsgi.input_terminated"] = True
        return True
    return bool(environ.get("CONTENT_LENGTH", "0") != "0")


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
# What the thread calls on the loop with the job's outcome, the context it runs in, the call.
Job = tuple[Callable[[Any], None], Callable[[BaseException], None], contextvars.Context, "Call"]


class Call:
    """One request's run of the app, in a pool thread."""

    def __init__(
        self,
        app: WsgiCallable,
        environ: dict[str, Any],
        body: InputStream,
        left: Callable[[], Awaitable[None]],
        send: Send,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.app = app
        self.environ = environ
        self.body = body
        self.left = left  # done once the answer is complete or the client has gone
        self.send = send
        self.loop = loop
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.length: int | None = None
        self.streaming = False  # the head has gone to the loop
        self.buffered: list[bytes] = []
        self.gone: Future[None] | None = None

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: ExcInfo | None = None
    ) -> Callable[[bytes], None]:
        if exc_info is not None:
            try:
                if self.streaming:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
            self.buffered.clear()
        elif self.status is not None:
            raise RuntimeError("WSGI start_response() called a second time without exc_info")
        self.status = _status(status)
        self.headers, self.length = _headers(headers)
        return self.write

    def write(self, data: bytes) -> None:
        """The legacy ``write`` callable: the block goes out before it returns."""
        if self.status is None:
            raise RuntimeError("WSGI write() called before start_response()")
        _check_block(data)
        if data:
            self._stream(data)

    def run(self) -> Answer | None:
        """Calls the app; the whole answer when it is known at once, else None (the
        answer was streamed from here)."""
        iterable = self.app(self.environ, self.start_response)
        try:
            return self._answer(iterable)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()

    def _answer(self, iterable: Iterable[bytes]) -> Answer | None:
        if isinstance(iterable, FileWrapper) and self._send_file(iterable):
            return None
        sized = isinstance(iterable, (list, tuple))
        got = sum(len(b) for b in self.buffered)
        for block in iterable:
            _check_block(block)
            if self.status is None:
                raise RuntimeError("the WSGI app produced a body before calling start_response()")
            if not block:
                continue
            if self.streaming:
                if not self._stream(block):
                    return None  # the client went away
                continue
            self.buffered.append(block)
            got += len(block)
            if sized or (self.length is not None and got >= self.length):
                continue  # the end is known: the rest (if any) comes at once
            if not self._stream(b"".join(self.buffered)):
                return None
            self.buffered.clear()
        if self.status is None:
            raise RuntimeError("the WSGI app returned without calling start_response()")
        if self.streaming:
            self._relay({"type": "http.response.body", "body": b"", "more_body": False})
            return None
        return self.status, self.headers, b"".join(self.buffered)

    def _send_file(self, wrapper: FileWrapper) -> bool:
        """A ``wsgi.file_wrapper`` around a regular file: its bytes go out from the
        loop (with sendfile where the connection allows) while this thread waits.
        False when it cannot (not a regular file, the app has written already): it
        is then iterated like any other response."""
        left = wrapper.remaining()
        if left is None or self.status is None or self.streaming or self.buffered:
            return False
        if self.length is None:
            self.headers.append((b"content-length", b"%d" % left))
        count = left if self.length is None else min(left, self.length)
        self.streaming = True
        self._relay({"type": "http.response.start", "status": self.status, "headers": self.headers})
        fh = wrapper.filelike
        asyncio.run_coroutine_threadsafe(send_range(self.send, fh, fh.tell(), count), self.loop).result()
        return True

    def _stream(self, block: bytes) -> bool:
        """Hands a block to the loop and waits until it is written (or the client is
        caught up); False when the client has gone."""
        if self.gone is not None and self.gone.done():
            return False
        if not self.streaming:
            assert self.status is not None
            self.streaming = True
            self._relay({"type": "http.response.start", "status": self.status, "headers": self.headers})
            # Watched so an endless stream stops when the client leaves (not when it
            # only shuts down its sending side: it still reads the answer).
            self.gone = asyncio.run_coroutine_threadsafe(self._left(), self.loop)
        self._relay({"type": "http.response.body", "body": block, "more_body": True})
        return not (self.gone is not None and self.gone.done())

    async def _left(self) -> None:
        await self.left()

    def _relay(self, message: Message) -> None:
        asyncio.run_coroutine_threadsafe(_sent(self.send, message), self.loop).result()


async def _sent(send: Send, message: Message) -> None:
    await send(message)


def _status(status: str) -> int:
    if not isinstance(status, str):
        raise TypeError(f"WSGI status must be a str such as '200 OK', got {type(status).__name__}")
    code = status[:3]
    if len(status) < 4 or not code.isdigit() or status[3] != " ":
        raise ValueError(f"WSGI status must be a code and a reason such as '200 OK', got {status!r}")
    return int(code)


def _headers(headers: list[tuple[str, str]]) -> tuple[list[tuple[bytes, bytes]], int | None]:
    if not isinstance(headers, list):
        raise TypeError(f"WSGI response headers must be a list of tuples, got {type(headers).__name__}")
    out: list[tuple[bytes, bytes]] = []
    length = None
    for item in headers:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"a WSGI response header must be a (name, value) tuple, got {item!r}")
        name, value = item
        if not (isinstance(name, str) and isinstance(value, str)):
            raise TypeError(f"WSGI response header names and values must be str, got {item!r}")
        raw_name = name.encode("latin-1").lower()
        raw_value = value.encode("latin-1")
        if raw_name == b"content-length":
            length = int(value) if value.isdigit() else None
        out.append((raw_name, raw_value))
    return out, length


def _check_block(block: object) -> None:
    if not isinstance(block, bytes):
        raise TypeError(f"a WSGI app must produce bytes, got {type(block).__name__}")


class WsgiApp(AsgiApp):
    """Serves ``app``, a WSGI callable (``veter run module:app`` makes one)."""

    interface = "WSGI"

    def __init__(self, app: WsgiCallable, **settings: Any) -> None:
        self.bridge = Bridge(app)
        super().__init__(self.bridge, **settings)
        self.wsgi_app = app

    def websocket_entry(self) -> Any:
        """None: WSGI has no WebSockets (an upgrade request is a plain request)."""
        return None

    def wsgi_entry(
        self, root_path: str
    ) -> tuple[Callable[[dict[str, Any], _core.AsgiCycle], None], dict[str, Any]]:
        """The bridge's ``submit`` and environ template: requests without a body go
        from the core to the pool directly."""
        return self.bridge.submit, self.bridge.template(root_path)

    async def startup(self) -> None:
        """Starts the thread pool, then veter's own startup hooks (WSGI has no lifespan)."""
        self.bridge.start(self._serving_config.threads)
        await App.startup(self)

    async def shutdown(self) -> None:
        try:
            await App.shutdown(self)
        finally:
            self.bridge.stop()
