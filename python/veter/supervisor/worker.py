"""What runs inside one worker process.

A worker imports the app itself (after the fork), so a rolling restart picks up
new code. It reports to the master over a pipe with one-byte messages:

- ``R`` ready: startup hooks ran and it is accepting;
- ``H`` heartbeat: its event loop turned (sent from a loop timer, so a blocked loop
  sends nothing and the master notices);
- ``C`` recycle me: a recycling limit (requests, RSS, lifetime) was reached;
- ``F`` fatal at startup (import or startup hook failed): the master must not
  respawn it in a loop.

Signals from the master: TERM/INT stop gracefully, WINCH starts the instance's
drain delay (/readyz answers 503, every answer closes its connection, serving goes
on), USR2 reopens the log files (after a rotation), USR1 dumps every thread's stack
(a stuck worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import logging
import os
import random
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, ClassVar

from veter.importer import import_app
from veter.logs import reopen_all
from veter.loops import loop_factory
from veter.server import Server
from veter.supervisor.linux import die_with_parent, rss_bytes

__all__ = ["WorkerSpec", "run_worker"]

log = logging.getLogger("veter.worker")

READY, HEARTBEAT, RECYCLE, FATAL = b"R", b"H", b"C", b"F"
EXIT_STARTUP_FAILED = 3


@dataclass(frozen=True)
class WorkerSpec:
    app_ref: str
    #: Settings given on the command line; applied over the app's own (``App(...)``).
    overrides: dict[str, Any]
    loop: str
    master_pid: int
    heartbeat_interval: float
    max_requests: int  # 0: no limit
    max_requests_jitter: int
    max_rss: int  # bytes, 0: no limit
    max_lifetime: float  # seconds, 0: no limit
    #: With --reuse-port: the addresses this worker binds its own sockets on, after
    #: its app started (None: serve the master's shared sockets).
    reuse_port_at: tuple[str, ...] | None = None


class _EarlySignals:
    """USR2 or WINCH that arrived before the loop's handlers were installed (USR2's
    default action would kill the worker, WINCH's would drop it); each is honoured
    once they are."""

    seen: ClassVar[set[int]] = set()

    @classmethod
    def note(cls, signum: int, frame: object) -> None:
        cls.seen.add(signum)


def _reset_signals() -> None:
    """The master's handlers were inherited by fork; a worker wants the defaults."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    # USR2's and WINCH's real handlers come with the loop; until then, remember them.
    for sig in (signal.SIGUSR2, signal.SIGWINCH):
        signal.signal(sig, _EarlySignals.note)


def _send(fd: int, message: bytes) -> None:
    # A full pipe means the master is busy; heartbeats are best effort.
    with contextlib.suppress(BlockingIOError, BrokenPipeError):
        os.write(fd, message)


class _Monitor:
    """Heartbeats, the orphan check and the recycling limits, on one loop timer."""

    def __init__(self, spec: WorkerSpec, server: Server, fd: int) -> None:
        self.spec = spec
        self.server = server
        self.fd = fd
        self.started = time.monotonic()
        jitter = random.randint(0, spec.max_requests_jitter) if spec.max_requests_jitter else 0
        self.max_requests = spec.max_requests + jitter if spec.max_requests else 0
        self.recycling = False
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._beat()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _beat(self) -> None:
        if os.getppid() != self.spec.master_pid:
            # The master is gone (PR_SET_PDEATHSIG covers most cases; this covers
            # the rest): never outlive it.
            os._exit(1)
        _send(self.fd, HEARTBEAT)
        if not self.recycling:
            reason = self._recycle_reason()
            if reason:
                log.info("worker %d asks to be recycled: %s", os.getpid(), reason)
                self.recycling = True
                _send(self.fd, RECYCLE)
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(self.spec.heartbeat_interval, self._beat)

    def _recycle_reason(self) -> str | None:
        spec = self.spec
        dispatcher = self.server.dispatcher
        if self.max_requests and dispatcher is not None and dispatcher.requests_served >= self.max_requests:
            return f"served {dispatcher.requests_served} requests (max {self.max_requests})"
        if spec.max_rss and rss_bytes() > spec.max_rss:
            return f"RSS {rss_bytes() // 2**20} MiB over {spec.max_rss // 2**20} MiB"
        if spec.max_lifetime and time.monotonic() - self.started > spec.max_lifetime:
            return f"alive for more than {spec.max_lifetime:g} s"
        return None


async def _serve(spec: WorkerSpec, socks: list[socket.socket], fd: int) -> int:
    try:
        app = import_app(spec.app_ref, spec.overrides.get("interface", "auto"))
    except Exception:  # noqa: BLE001 - any import error is fatal and reported
        sys.stderr.write(f"[worker {os.getpid()}] could not import {spec.app_ref}:\n{traceback.format_exc()}")
        _send(fd, FATAL)
        return EXIT_STARTUP_FAILED
    try:
        config = app.config.with_(**spec.overrides)
        if spec.reuse_port_at is not None:
            config = config.with_(bind=spec.reuse_port_at, uds=None, fd=None)
    except (TypeError, ValueError) as exc:
        sys.stderr.write(f"[worker {os.getpid()}] bad settings: {exc}\n")
        _send(fd, FATAL)
        return EXIT_STARTUP_FAILED
    # The drain delay is the master's to time, for every worker at once (WINCH).
    server = Server(app, config, delay_on_stop=False, owns_process=True)
    try:
        await server.start(sock=socks or None, reuse_port=spec.reuse_port_at is not None)
    except Exception:  # noqa: BLE001 - a failing startup hook is fatal and reported
        sys.stderr.write(f"[worker {os.getpid()}] startup failed:\n{traceback.format_exc()}")
        _send(fd, FATAL)
        return EXIT_STARTUP_FAILED
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.on_stop_signal, sig)
    loop.add_signal_handler(signal.SIGWINCH, server.leave)
    if signal.SIGWINCH in _EarlySignals.seen:
        server.leave()
    # The master renamed the log files (rotation, or logrotate's SIGUSR1 to it).
    loop.add_signal_handler(signal.SIGUSR2, reopen_all)
    if signal.SIGUSR2 in _EarlySignals.seen:
        reopen_all()
    monitor = _Monitor(spec, server, fd)
    monitor.start()
    _send(fd, READY)
    try:
        await server.serve_forever()
    finally:
        monitor.stop()
        await server.stop()
    return server.exit_code


def run_worker(spec: WorkerSpec, socks: list[socket.socket], fd: int) -> int:
    """The body of a forked worker; returns its exit status."""
    _reset_signals()
    # Log files inherited from the master may have been rotated since it opened them.
    reopen_all()
    die_with_parent(spec.master_pid)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    os.set_blocking(fd, False)
    with asyncio.Runner(loop_factory=loop_factory(spec.loop)) as runner:
        return runner.run(_serve(spec, socks, fd))
