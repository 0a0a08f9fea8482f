"""Serving an app in one process: listen, serve until a signal, drain, stop.

Order on start: startup hooks, then listen (no request is accepted before the app
is ready). Order on SIGTERM/SIGINT: with ``drain_delay``, keep serving that long
with /readyz answering 503 and every answer closing its connection (so the load
balancer takes the instance out before it stops accepting); then accept what is
already queued, close the
listening socket, let in-flight requests finish (every answer from then on carries
``Connection: close``; an idle keep-alive connection is closed when its keep-alive
time is up, never under a client that may be sending) up to ``graceful_timeout``,
close what is left, then run the shutdown hooks. The same signal twice skips the
drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import logging
import signal
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from veter import _core, background, metrics
from veter.binds import adopted, listen_all, remove_unix_file, url_of
from veter.collector import YoungThreshold
from veter.concurrency import configure_thread_pool, shutdown_thread_pool
from veter.config import ServerConfig
from veter.lagmonitor import LagMonitor
from veter.listener import Listener, accept_pending
from veter.logs import Rotator, open_log, reopen_all
from veter.logs import configure as configure_logs
from veter.loops import loop_factory
from veter.sockets import HANDSHAKE_GRACE, stop_handshakes
from veter.tls import context_for

if TYPE_CHECKING:
    # The app depends on the server only to run itself (App.run); the server needs
    # just its type.
    from veter.app import App

__all__ = ["Server", "run"]

log = logging.getLogger("veter.server")

#: How often connection timeouts are checked (their resolution).
TICK_SECONDS = 0.25
#: How often a worker writes its metrics snapshot for the others (in ticks).
METRICS_EVERY_TICKS = 4
#: How often a single-process server checks whether its log files are due for rotation.
ROTATION_CHECK_SECONDS = 0.5


class Server:
    """One listening server for ``app`` on the running loop."""

    def __init__(
        self, app: App, config: ServerConfig, *, delay_on_stop: bool = True, owns_process: bool = False
    ) -> None:
        self.app = app
        self.config = config
        #: Whether ``stop`` waits out ``drain_delay`` itself (a worker's master does it
        #: for the whole instance, and tells the worker with ``leave``).
        self.delay_on_stop = delay_on_stop
        #: Whether serving is what this process is for (``serve``, a worker), so that
        #: ``gc_freeze`` applies; a server embedded in a larger program (a test) leaves
        #: the program's collector alone.
        self.owns_process = owns_process
        self._cut_delay = asyncio.Event()
        self._left = False
        self.dispatcher: _core.Dispatcher | None = None
        self._servers: list[asyncio.Server | Listener] = []
        self._tick: asyncio.TimerHandle | None = None
        self._stop = asyncio.Event()
        #: The process exit status: non-zero after a fatal error (see ``fail``).
        self.exit_code = 0
        #: Watches the loop for blocking code (None when ``lag_threshold`` is 0).
        self.lag_monitor: LagMonitor | None = None
        #: The access log (None when off).
        self.access_log: _core.LogFile | None = None
        self._ticks = 0
        #: A duplicate of each listening socket, to accept what is still queued on stop.
        self._queues: list[socket.socket] = []
        #: Those of ``_queues`` this server bound itself (the ones it may quiesce).
        self._owned: list[socket.socket] = []
        self._tls: ssl.SSLContext | None = None
        self._force = False
        self._owns_socket = False
        self._signals_seen: set[int] = set()
        self._froze = False
        #: The young generation's threshold while serving (``gc_threshold``; undone on stop).
        self._young: YoungThreshold | None = None
        self._metrics_dir = metrics.snapshot_dir() if config.metrics_path else None

    @property
    def sockets(self) -> list[socket.socket]:
        return [sock for server in self._servers for sock in server.sockets]

    @property
    def port(self) -> int:
        """The first TCP socket's port (useful with ``port=0``)."""
        for sock in self.sockets:
            if sock.family != socket.AF_UNIX:
                return int(sock.getsockname()[1])
        raise RuntimeError("this server listens on no TCP socket")

    async def start(
        self, sock: socket.socket | list[socket.socket] | None = None, *, reuse_port: bool = False
    ) -> None:
        """Runs the startup hooks, then listens: on ``sock`` (one or several, shared
        with other processes, which keep them open) or on sockets of its own made
        here from the settings (``binds.endpoints_for``), after the hooks (with
        ``reuse_port``, each TCP one of a SO_REUSEPORT group)."""
        configure_thread_pool(self.config.max_threads)
        tls = context_for(self.config)  # a bad certificate fails before startup hooks run
        self.app.serve_with(self.config)
        await self.app.startup()
        loop = asyncio.get_running_loop()
        if self.config.access_log is not None:
            self.access_log = open_log(self.config.access_log, buffer_bytes=self.config.log_buffer_bytes)
            # Lines wait in the buffer until log_flush_interval has passed since the
            # first of them (0: the end of the loop iteration that made them), or
            # until the buffer is full: then they are written together, in one write.
            flush = self.access_log.flush
            interval = self.config.log_flush_interval
            schedule = (
                functools.partial(loop.call_later, interval, flush)
                if interval
                else functools.partial(loop.call_soon, flush)
            )
            self.access_log.set_scheduler(schedule)
        # A hosted app's metrics path is veter's too: the app never sees it.
        if self.config.metrics_path and not any(r.name == "veter.metrics" for r in self.app.routes):
            metrics.mount(self.app, self.config.metrics_path, self)
        self.dispatcher = self.app.build_dispatcher(self.config, access_log=self.access_log)
        loop.set_exception_handler(self._on_loop_error)
        if self.config.gc_freeze and self.owns_process:
            # Before the first connection: what is alive now lives as long as the
            # process, and a full collection would otherwise walk all of it again
            # each time (docs/design.md, "The collector").
            gc.collect()
            gc.freeze()
            self._froze = True
        if self.config.gc_threshold and self.owns_process:
            # Requests in flight hold tracked objects (tasks, coroutines, scopes, bodies);
            # at Python's threshold a collection comes every few dozen requests and walks
            # them all again, alive; a fixed high one makes each collection of an app
            # that leaves cycles a long pause (docs/design.md, "The collector").
            self._young = YoungThreshold(self.config.gc_threshold, adaptive=self.config.gc_adaptive)
            self._young.install()
        # Only sockets no other process holds are this server's to quiesce on stop.
        self._owns_socket = sock is None
        socks = listen_all(self.config, reuse_port=reuse_port) if sock is None else sock
        socks = socks if isinstance(socks, list) else [socks]
        self._tls = tls
        listeners: list[Listener] = []
        for each in socks:
            # Kept to accept what is still queued when the listener closes (``stop``).
            queue = each.dup()
            self._queues.append(queue)
            if sock is None and not adopted(each) and each.family != socket.AF_UNIX:
                self._owned.append(queue)
            if self.config.max_concurrency > 0:
                # At the cap this worker stops accepting, so the others take new connections.
                listener = Listener(each, self.dispatcher, self.config.backlog, tls=tls)
                await listener.start()
                listeners.append(listener)
                self._servers.append(listener)
            else:
                server = await loop.create_server(
                    self.dispatcher, sock=each, backlog=self.config.backlog, ssl=tls
                )
                self._servers.append(server)
        if listeners:

            def set_saturated(saturated: bool) -> None:
                for listener in listeners:
                    listener.set_saturated(saturated)

            self.dispatcher.set_saturation_callback(set_saturated)
        self._schedule_tick()
        if self.config.lag_threshold > 0:
            self.lag_monitor = LagMonitor(self.app.routes, self.config.lag_threshold)
            self.lag_monitor.start()

    def _schedule_tick(self) -> None:
        loop = asyncio.get_running_loop()
        self._tick = loop.call_later(TICK_SECONDS, self._on_tick)

    def _on_tick(self) -> None:
        if self.dispatcher is not None:
            try:
                self.dispatcher.tick()
            except Exception:
                log.exception("connection reaper failed")
        self._ticks += 1
        if self._metrics_dir is not None and self._ticks % METRICS_EVERY_TICKS == 0:
            try:
                metrics.write_worker(self._metrics_dir, self)
            except Exception:
                log.exception("writing the metrics snapshot failed")
        self._schedule_tick()

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Errors the loop could not hand to anyone. Most are logged and survived;
        the ones that leave the process unable to serve end it, so a supervisor
        replaces it instead of keeping a half-alive worker."""
        exc = context.get("exception")
        if is_fatal(exc):
            self.fail(f"fatal error: {context.get('message')}: {exc!r}")
        loop.default_exception_handler(context)

    def fail(self, reason: str) -> None:
        """Stop with a non-zero exit status (used for errors the process cannot recover from)."""
        log.critical("%s; stopping this process", reason)
        self.exit_code = 70  # EX_SOFTWARE
        self._stop.set()

    def leave(self) -> None:
        """The drain delay begins: /readyz answers 503 and every answer closes its
        connection, while requests (and new connections) are still served."""
        if self._left:
            return
        self._left = True
        log.info("leaving: /readyz answers 503 and answers close their connections; still serving")
        self.app.begin_leaving()
        if self.dispatcher is not None:
            self.dispatcher.close_keepalive()

    def request_stop(self) -> None:
        """Ask ``serve_forever`` to return (signal-safe: only sets an event)."""
        self._stop.set()

    def on_stop_signal(self, signum: int) -> None:
        """SIGTERM/SIGINT: stop gracefully; the same signal again skips the drain
        (Ctrl+C twice). A worker gets SIGINT from the terminal and SIGTERM from its
        master for one Ctrl+C: two different signals, so that still drains."""
        if signum in self._signals_seen and not self._force:
            self._force = True
            self._cut_delay.set()
            log.warning("%s again: closing every connection now", signal.Signals(signum).name)
            if self.dispatcher is not None:
                self.dispatcher.abort_all()
        self._signals_seen.add(signum)
        self._stop.set()

    async def serve_forever(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        """Wait out the drain delay (if any), stop accepting, drain, run shutdown hooks."""
        loop = asyncio.get_running_loop()
        delay = self.config.drain_delay
        if delay > 0 and self.delay_on_stop and not self._left and not self._force:
            log.info("drain delay of %g s", delay)
            self.leave()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cut_delay.wait(), delay)
        self.app.begin_draining()
        deadline = loop.time() + self.config.graceful_timeout
        # Connections already queued are taken before the listener closes (closing
        # would reset them); from the close on, new ones are refused by the kernel
        # once no other process holds the socket (see docs/deploy.md).
        # (Sockets another process holds or that outlive this one, such as systemd's,
        # are left as they are: a filter would stay on them.)
        if [q for q in self._owned if stop_handshakes(q)]:
            # Handshakes under way finish into the queue; new ones are not started.
            await asyncio.sleep(HANDSHAKE_GRACE)
        queued = [conn for q in self._queues for conn in accept_pending(q)]
        for server in self._servers:
            server.close()
        for q in self._queues:
            if self._owns_socket:
                remove_unix_file(q)
            q.close()
        self._queues = []
        self._owned = []
        if queued and self.dispatcher is not None:
            dispatcher = self.dispatcher
            await self._within(
                asyncio.gather(
                    *(loop.connect_accepted_socket(dispatcher, conn, ssl=self._tls) for conn in queued),
                    return_exceptions=True,
                ),
                deadline,
            )
        if self.dispatcher is not None:
            self.dispatcher.set_saturation_callback(None)
            drained: asyncio.Future[None] = loop.create_future()

            def on_drained() -> None:
                if not drained.done():
                    drained.set_result(None)

            self.dispatcher.shutdown(on_drained)
            await self._within(drained, deadline)
        # Background tasks of answered requests finish (or are cancelled at the deadline).
        await background.drain(deadline - loop.time())
        # WebSockets are told the server is going away (1001) and get until the
        # deadline to finish their close handshake.
        await self.app.websockets.close_all(deadline - loop.time())
        if self._servers:
            # Also waits for connections the loop accepted just before the listener
            # closed, whose protocol had not started yet when the drain began.
            await self._within(asyncio.gather(*(server.wait_closed() for server in self._servers)), deadline)
        if self._tick is not None:
            self._tick.cancel()
        if self.lag_monitor is not None:
            self.lag_monitor.stop()
        try:
            await self.app.shutdown()
        finally:
            shutdown_thread_pool()
            if self.access_log is not None:
                self.access_log.set_scheduler(None)
                self.access_log.close()  # writes what is buffered
            if self._froze:
                # A process that goes on after serving (tests, an embedding program)
                # gets its cycles collected again.
                gc.unfreeze()
                self._froze = False
            if self._young is not None:
                self._young.uninstall()
                self._young = None

    async def _within(self, awaitable: Awaitable[object], deadline: float) -> None:
        """Await ``awaitable`` until ``deadline``; past it, close every connection."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(awaitable, max(0.0, deadline - loop.time()))
        except TimeoutError:
            assert self.dispatcher is not None
            left = self.dispatcher.abort_all()
            log.warning("graceful timeout: closed %d connection(s) with requests in flight", left)


async def serve(app: App, config: ServerConfig, *, ready: Callable[[Server], Any] | None = None) -> int:
    """Serve until SIGINT/SIGTERM, then stop gracefully; returns the exit status."""
    server = Server(app, config, owns_process=True)
    loop = asyncio.get_running_loop()
    await server.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.on_stop_signal, sig)
    # Without a master this process rotates its own log files and reopens them on
    # SIGUSR1 (logrotate) or SIGUSR2 (what a master sends its workers).
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        loop.add_signal_handler(sig, reopen_all)
    rotation = _start_rotation(config, loop)
    scheme = "https" if config.ssl_certfile else "http"
    urls = ", ".join(url_of(sock, scheme) for sock in server.sockets)
    log.info("veter serving on %s (loop: %s)", urls, type(loop).__module__)
    if ready is not None:
        ready(server)
    try:
        await server.serve_forever()
        log.info("shutting down: draining in-flight requests")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
            loop.remove_signal_handler(sig)
        if rotation is not None:
            rotation.cancel()
        await server.stop()
    log.info("stopped")
    return server.exit_code


def is_fatal(exc: object) -> bool:
    """Out of descriptors or memory on accept, or a broken invariant in the core."""
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
        return True
    return type(exc).__name__ == "PanicException"


def log_paths(config: ServerConfig) -> list[str]:
    """The log files ``config`` writes (stdout and stderr are not rotated)."""
    paths = [config.access_log, config.log_file]
    return [p for p in paths if p is not None and p not in ("-", "stderr")]


def rotator_for(config: ServerConfig) -> Rotator:
    return Rotator(
        log_paths(config),
        max_bytes=config.log_max_bytes,
        interval=config.log_rotate_interval,
        backups=config.log_backups,
    )


class _Rotation:
    """Checks the log files every ROTATION_CHECK_SECONDS; reopens them after a rotation."""

    def __init__(self, rotator: Rotator, loop: asyncio.AbstractEventLoop) -> None:
        self.rotator = rotator
        self.loop = loop
        self.handle = loop.call_later(ROTATION_CHECK_SECONDS, self._check)

    def _check(self) -> None:
        try:
            if self.rotator.check():
                reopen_all()
        except OSError:
            log.exception("log rotation failed")
        self.handle = self.loop.call_later(ROTATION_CHECK_SECONDS, self._check)

    def cancel(self) -> None:
        self.handle.cancel()


def _start_rotation(config: ServerConfig, loop: asyncio.AbstractEventLoop) -> _Rotation | None:
    rotator = rotator_for(config)
    return _Rotation(rotator, loop) if rotator.enabled else None


def configure_logging(config: ServerConfig | None = None) -> None:
    """Application log records (with request ids) in the configured format, unless
    the application configured logging itself (then its handlers get request ids)."""
    config = config or ServerConfig()
    configure_logs(log_format=config.log_format, log_level=config.log_level, log_file=config.log_file)


def run(app: App, config: ServerConfig) -> int:
    """Run ``serve`` on a new event loop (uvloop when available); returns the exit status."""
    configure_logging(config)
    with asyncio.Runner(loop_factory=loop_factory(config.loop)) as runner:
        return runner.run(serve(app, config))
