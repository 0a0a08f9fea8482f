"""Serving an app in one process: listen, serve until a signal, drain, stop.

Order on start: startup hooks, then listen (no request is accepted before the app
is ready). Order on SIGTERM/SIGINT: stop accepting, let in-flight requests finish
(idle keep-alive connections close at once, busy ones after their response, which
carries ``Connection: close``) up to ``graceful_timeout``, close what is left, then
run the shutdown hooks.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from veter import _core
from veter.app import App
from veter.concurrency import configure_thread_pool, shutdown_thread_pool
from veter.config import ServerConfig
from veter.loops import loop_factory

__all__ = ["Server", "run"]

log = logging.getLogger("veter.server")

TICK_SECONDS = 1.0


class Server:
    """One listening server for ``app`` on the running loop."""

    def __init__(self, app: App, config: ServerConfig) -> None:
        self.app = app
        self.config = config
        self.dispatcher: _core.Dispatcher | None = None
        self._server: asyncio.Server | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._stop = asyncio.Event()

    @property
    def sockets(self) -> list[socket.socket]:
        return list(self._server.sockets) if self._server else []

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``)."""
        return int(self.sockets[0].getsockname()[1])

    async def start(self, sock: socket.socket | None = None) -> None:
        configure_thread_pool(self.config.max_threads)
        await self.app.startup()
        self.dispatcher = self.app.build_dispatcher(self.config)
        loop = asyncio.get_running_loop()
        if sock is not None:
            self._server = await loop.create_server(self.dispatcher, sock=sock, backlog=self.config.backlog)
        else:
            self._server = await loop.create_server(
                self.dispatcher,
                self.config.host,
                self.config.port,
                backlog=self.config.backlog,
                reuse_address=True,
            )
        self._schedule_tick()

    def _schedule_tick(self) -> None:
        loop = asyncio.get_running_loop()
        self._tick = loop.call_later(TICK_SECONDS, self._on_tick)

    def _on_tick(self) -> None:
        if self.dispatcher is not None:
            try:
                self.dispatcher.tick()
            except Exception:
                log.exception("connection reaper failed")
        self._schedule_tick()

    def request_stop(self) -> None:
        """Ask ``serve_forever`` to return (signal-safe: only sets an event)."""
        self._stop.set()

    async def serve_forever(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        """Stop accepting, drain, run shutdown hooks."""
        self.app.begin_draining()
        if self._tick is not None:
            self._tick.cancel()
        if self._server is not None:
            self._server.close()
        if self.dispatcher is not None:
            loop = asyncio.get_running_loop()
            drained: asyncio.Future[None] = loop.create_future()

            def on_drained() -> None:
                if not drained.done():
                    drained.set_result(None)

            self.dispatcher.shutdown(on_drained)
            try:
                await asyncio.wait_for(drained, self.config.graceful_timeout)
            except TimeoutError:
                left = self.dispatcher.abort_all()
                log.warning("graceful timeout: closed %d connection(s) with requests in flight", left)
        if self._server is not None:
            await self._server.wait_closed()
        try:
            await self.app.shutdown()
        finally:
            shutdown_thread_pool()


async def serve(app: App, config: ServerConfig, *, ready: Callable[[Server], Any] | None = None) -> None:
    """Serve until SIGINT/SIGTERM, then stop gracefully."""
    server = Server(app, config)
    loop = asyncio.get_running_loop()
    await server.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.request_stop)
    host, port = server.sockets[0].getsockname()[:2]
    log.info("veter serving on http://%s:%d (loop: %s)", host, port, type(loop).__module__)
    if ready is not None:
        ready(server)
    try:
        await server.serve_forever()
        log.info("shutting down: draining in-flight requests")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await server.stop()
    log.info("stopped")


def run(app: App, config: ServerConfig) -> None:
    """Run ``serve`` on a new event loop (uvloop when available)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with asyncio.Runner(loop_factory=loop_factory(config.loop)) as runner:
        runner.run(serve(app, config))
