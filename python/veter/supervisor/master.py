"""The master process: supervises N workers serving one port.

The master binds the listening socket, forks the workers, and then only watches:
signals (through a self-pipe), one status pipe per worker, and exits of children.
It runs no event loop and imports no application code, so nothing in the app can
block it or crash it.

Signals: TERM/INT stop gracefully (with a drain delay, the workers are first told
with WINCH to fail readiness and close keep-alive connections while still serving,
for that long; then they drain up to the graceful timeout, and are killed after it;
the same signal again skips what is left of the delay); HUP replaces every worker, one at a time, a new one ready before an old
one is told to stop; TTIN/TTOU add or remove a worker; USR1 reopens the log files
(for logrotate: the master reopens its own and sends USR2 to each worker).

Log rotation by size or age is done here, by this one process: rename the files,
then USR2 to the workers; lines they write before reopening land in the renamed
file, so none are lost.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from veter import metrics
from veter.binds import BindError, adopted, endpoints_for, listen_all, remove_unix_file, reserve_port, url_of
from veter.config import ServerConfig
from veter.logs import reopen_all
from veter.sockets import HANDSHAKE_GRACE, stop_handshakes
from veter.supervisor.config import MasterConfig
from veter.supervisor.worker import FATAL, HEARTBEAT, READY, RECYCLE, WorkerSpec, run_worker

__all__ = ["Master"]

log = logging.getLogger("veter.master")

EXIT_STARTUP_FAILED = 3
#: How long a worker dumped for being stuck gets to print its traceback.
DUMP_GRACE = 0.5
#: How often the log files are checked for rotation.
ROTATION_CHECK_SECONDS = 0.1
#: The longest the master waits when nothing falls due sooner. Signals (SIGCHLD among
#: them) and the workers' status bytes wake it at once; its timed checks (heartbeats,
#: kill deadlines, respawn backoff, the drain delay, rotation) each wake it when due.
IDLE_WAIT_SECONDS = 1.0


@dataclass
class _Worker:
    pid: int
    fd: int
    started: float
    last_heartbeat: float
    ready: bool = False
    stopping: bool = False
    dumped_at: float | None = None
    kill_at: float = 0.0  # when a stopping worker is killed if still alive
    replaces: int | None = None  # pid of the worker this one replaces (HUP, recycling)


class Master:
    def __init__(
        self,
        app_ref: str,
        server: ServerConfig,
        config: MasterConfig,
        *,
        overrides: dict[str, Any] | None = None,
    ) -> None:
        self.app_ref = app_ref
        #: Listening settings for the master; workers apply ``overrides`` to their app's config.
        self.server = server
        self.overrides = dict(overrides or {})
        self.config = config
        self.target = config.worker_count
        self.workers: dict[int, _Worker] = {}
        #: The listening sockets the workers share (none with reuse_port).
        self.socks: list[socket.socket] = []
        #: With reuse_port: hold the ports the workers bind (see ``sockets.reserve``).
        self._reserved: list[socket.socket] = []
        #: With reuse_port: what each worker binds (the reserved addresses and ports).
        self._reuse_binds: tuple[str, ...] = ()
        self.stopping = False
        #: In the drain delay: when the workers are told to stop (None: not leaving).
        self.leaving_until: float | None = None
        self.exit_code = 0
        self.ever_ready = False
        self.respawn_delay = 0.0
        self.next_spawn_at = 0.0
        self.restarts = 0
        self._signals: list[int] = []
        self._hup_queue: list[int] = []
        self._wake_r, self._wake_w = socket.socketpair()
        from veter.server import rotator_for

        self.rotator = rotator_for(server)
        self._next_rotation_check = 0.0
        self._published: tuple[int, int] | None = None
        self.metrics_dir = Path()

    # -- lifecycle ---------------------------------------------------------------

    def run(self) -> int:
        # Workers add up each other's metrics through this directory (veter.metrics).
        self.metrics_dir = Path(tempfile.mkdtemp(prefix="veter-metrics-"))
        os.environ[metrics.ENV_DIR] = str(self.metrics_dir)
        try:
            return self._run()
        finally:
            shutil.rmtree(self.metrics_dir, ignore_errors=True)
            os.environ.pop(metrics.ENV_DIR, None)

    def _run(self) -> int:
        scheme = "https" if self.server.ssl_certfile else "http"
        if not self.config.reuse_port:
            self.socks = listen_all(self.server)
            urls = ", ".join(url_of(sock, scheme) for sock in self.socks)
        else:
            self._reserve_ports()
            urls = ", ".join(url_of(sock, scheme) for sock in self._reserved)
        self._install_signals()
        log.info("veter master %d: %d worker(s) for %s", os.getpid(), self.target, self.app_ref)
        for _ in range(self.target):
            self._spawn()
        started_logged = False
        try:
            while self.workers or not self.stopping:
                self._tick()
                if not started_logged and self.ever_ready:
                    started_logged = True
                    log.info("veter serving on %s (%d workers)", urls, self.target)
        finally:
            self._close_sockets()
            for sock in self._reserved:
                sock.close()
            self._wake_r.close()
            self._wake_w.close()
        log.info("master %d: stopped", os.getpid())
        return self.exit_code

    def _reserve_ports(self) -> None:
        """--reuse-port: hold each TCP port the workers will bind (port 0: the one the
        kernel picks), so every worker binds the same."""
        endpoints = endpoints_for(
            self.server.bind, self.server.uds, self.server.fd, self.server.host, self.server.port
        )
        if any(e.kind != "tcp" for e in endpoints):
            raise BindError(
                "--reuse-port works with TCP addresses only (not with unix:, fd:// or systemd sockets)"
            )
        try:
            for endpoint in endpoints:
                sock = reserve_port(endpoint)
                self._reserved.append(sock)
                self._reuse_binds += (str(replace(endpoint, port=sock.getsockname()[1])),)
        except BindError:
            for sock in self._reserved:
                sock.close()
            raise

    def _close_sockets(self) -> None:
        for sock in self.socks:
            remove_unix_file(sock)
            sock.close()
        self.socks = []

    def _install_signals(self) -> None:
        self._wake_w.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        for sig in (
            signal.SIGTERM,
            signal.SIGINT,
            signal.SIGHUP,
            signal.SIGTTIN,
            signal.SIGTTOU,
            signal.SIGCHLD,
            signal.SIGUSR1,
        ):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    # -- the loop ------------------------------------------------------------------

    def _tick(self) -> None:
        fds = [self._wake_r.fileno()] + [w.fd for w in self.workers.values()]
        try:
            readable, _, _ = select.select(fds, [], [], self._wait_seconds())
        except InterruptedError:
            readable = []
        if self._wake_r.fileno() in readable:
            with contextlib.suppress(BlockingIOError):
                self._wake_r.recv(4096)
        while self._signals:
            self._handle_signal(self._signals.pop(0))
        if self.leaving_until is not None and not self.stopping and time.monotonic() >= self.leaving_until:
            log.info("master: drain delay over, stopping workers gracefully")
            self._stop_all()
        for worker in list(self.workers.values()):
            if worker.fd in readable:
                self._read_status(worker)
        self._reap()
        self._check_health()
        self._maintain()
        self._check_rotation()
        self._publish_metrics()

    def _wait_seconds(self) -> float:
        """Until the next timed check falls due: an idle master wakes about once a second
        (and once per worker heartbeat), not ten times."""
        now = time.monotonic()
        due = now + IDLE_WAIT_SECONDS
        if self.leaving_until is not None and not self.stopping:
            due = min(due, self.leaving_until)
        if self.next_spawn_at > now:
            due = min(due, self.next_spawn_at)
        if self.rotator.enabled:
            due = min(due, self._next_rotation_check)
        for worker in self.workers.values():
            if worker.dumped_at is not None:
                due = min(due, worker.dumped_at + DUMP_GRACE)
            elif worker.stopping:
                due = min(due, worker.kill_at)
            else:
                due = min(due, worker.last_heartbeat + self.config.worker_timeout)
        # A hair past the deadline, so that the check it wakes for finds it passed.
        return max(0.0, due - now) + 0.001

    def _check_rotation(self) -> None:
        now = time.monotonic()
        if not self.rotator.enabled or now < self._next_rotation_check:
            return
        self._next_rotation_check = now + ROTATION_CHECK_SECONDS
        try:
            rotated = self.rotator.check()
        except OSError:
            log.exception("master: log rotation failed")
            return
        if rotated:
            self._reopen_logs()

    def _reopen_logs(self) -> None:
        """Reopen this process's log files and tell every worker to reopen its own."""
        reopen_all()
        for worker in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGUSR2)

    def _handle_signal(self, signum: int) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT):
            if self.stopping:
                return
            name = signal.Signals(signum).name
            delay = self.server.drain_delay
            if delay > 0 and self.leaving_until is None:
                log.info("master: %s, /readyz answers 503; still serving for %g s (drain delay)", name, delay)
                self.leaving_until = time.monotonic() + delay
                self._hup_queue = []
                for worker in self.workers.values():
                    self._tell_leaving(worker)
                return
            log.info("master: %s, stopping workers gracefully", name)
            self._stop_all()
        elif signum == signal.SIGHUP and not self.stopping and self.leaving_until is None:
            log.info("master: SIGHUP, replacing workers one at a time")
            # Workers still starting are replaced too: they may have imported the old code.
            self._hup_queue = [w.pid for w in self.workers.values() if not w.stopping and w.replaces is None]
            self._next_replacement()
        elif signum == signal.SIGUSR1:
            log.info("master: SIGUSR1, reopening log files")
            self._reopen_logs()
        elif signum == signal.SIGTTIN and not self.stopping:
            self.target += 1
            log.info("master: SIGTTIN, now %d workers", self.target)
        elif signum == signal.SIGTTOU and not self.stopping and self.target > 1:
            self.target -= 1
            log.info("master: SIGTTOU, now %d workers", self.target)

    def _read_status(self, worker: _Worker) -> None:
        try:
            data = os.read(worker.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        now = time.monotonic()
        for byte in (data[i : i + 1] for i in range(len(data))):
            worker.last_heartbeat = now
            if byte == READY:
                self._on_ready(worker)
            elif byte == RECYCLE and not worker.stopping and not self.stopping:
                if not any(w.replaces == worker.pid for w in self.workers.values()):
                    self._spawn(replaces=worker.pid)
            elif byte == FATAL:
                self._on_fatal(worker)
            elif byte != HEARTBEAT:
                log.warning("worker %d sent an unknown status byte %r", worker.pid, byte)

    def _tell_leaving(self, worker: _Worker) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGWINCH)

    def _on_ready(self, worker: _Worker) -> None:
        log.info("worker %d ready", worker.pid)
        if self.leaving_until is not None:
            self._tell_leaving(worker)  # a replacement started during the drain delay
        worker.ready = True
        self.ever_ready = True
        self.respawn_delay = 0.0
        if worker.replaces is not None:
            old = self.workers.get(worker.replaces)
            if old is not None and not old.stopping:
                self._terminate(old)
            worker.replaces = None
            self._next_replacement()

    def _next_replacement(self) -> None:
        """Start the replacement of the next worker a rolling restart still has to replace."""
        while self._hup_queue:
            old = self.workers.get(self._hup_queue.pop(0))
            if old is not None and not old.stopping:
                self._spawn(replaces=old.pid)
                return

    def _on_fatal(self, worker: _Worker) -> None:
        if worker.replaces is not None:
            # A replacement (HUP or recycling) could not start: keep the old worker.
            log.error("replacement worker %d failed to start; keeping worker %d", worker.pid, worker.replaces)
            self._hup_queue = []
            return
        log.error("worker %d failed to start the app: stopping (exit %d)", worker.pid, EXIT_STARTUP_FAILED)
        self.exit_code = EXIT_STARTUP_FAILED
        self._stop_all()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            worker = self.workers.pop(pid, None)
            if worker is None:
                continue
            os.close(worker.fd)
            self._retire_metrics(pid)
            code = os.waitstatus_to_exitcode(status)
            if worker.stopping or self.stopping:
                log.info("worker %d exited (%d)", pid, code)
                continue
            self.restarts += 1
            if not worker.ready:
                # Died during startup without saying why: back off before trying again.
                self.respawn_delay = min(max(self.respawn_delay * 2, 0.1), 5.0)
                self.next_spawn_at = time.monotonic() + self.respawn_delay
                log.error(
                    "worker %d died during startup (%d); retrying in %.1f s", pid, code, self.respawn_delay
                )
            else:
                log.error("worker %d died (%d); replacing it", pid, code)

    def _retire_metrics(self, pid: int) -> None:
        try:
            metrics.fold_retired(self.metrics_dir, pid)
        except OSError:
            log.exception("master: could not update the metrics directory")

    def _publish_metrics(self) -> None:
        """The master's own figures, rewritten when they change."""
        figures = (self.restarts, len(self.workers))
        if figures == self._published:
            return
        try:
            metrics.write_master(self.metrics_dir, *figures)
            self._published = figures
        except OSError:
            log.exception("master: could not update the metrics directory")

    def _check_health(self) -> None:
        now = time.monotonic()
        for worker in list(self.workers.values()):
            if worker.dumped_at is not None:
                if now - worker.dumped_at > DUMP_GRACE:
                    self._kill(worker.pid)
                continue
            if worker.stopping:
                if now > worker.kill_at:
                    log.warning("worker %d did not stop within the graceful timeout: killing it", worker.pid)
                    self._kill(worker.pid)
                    worker.kill_at = now + 60  # do not log again while the kernel reaps it
                continue
            silent_for = now - worker.last_heartbeat
            if silent_for > self.config.worker_timeout:
                log.error(
                    "worker %d: event loop has not turned for %.1f s (worker timeout %g s): dumping its "
                    "stack and replacing it",
                    worker.pid,
                    silent_for,
                    self.config.worker_timeout,
                )
                worker.dumped_at = now
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGUSR1)

    def _maintain(self) -> None:
        if self.stopping:
            return
        active = [w for w in self.workers.values() if not w.stopping and w.dumped_at is None]
        replacing = [w for w in active if w.replaces is not None]
        serving = len(active) - len(replacing)
        if serving < self.target and time.monotonic() >= self.next_spawn_at:
            for _ in range(self.target - serving):
                self._spawn()
        elif serving > self.target:
            newest = sorted((w for w in active if w.replaces is None), key=lambda w: w.started)
            for worker in newest[self.target :]:
                self._terminate(worker)

    # -- process control -----------------------------------------------------------

    def _spawn(self, replaces: int | None = None) -> None:
        if self.stopping:
            return  # the listening socket is closed: a new worker could only bind a new one
        read_fd, write_fd = os.pipe()
        spec = WorkerSpec(
            app_ref=self.app_ref,
            overrides=self.overrides,
            loop=self.server.loop,
            master_pid=os.getpid(),
            heartbeat_interval=min(1.0, self.config.worker_timeout / 4),
            max_requests=self.config.max_requests,
            max_requests_jitter=self.config.max_requests_jitter,
            max_rss=self.config.max_rss * 2**20,
            max_lifetime=self.config.max_lifetime,
            reuse_port_at=self._reuse_binds or None,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                os.close(read_fd)
                for other in self.workers.values():
                    os.close(other.fd)
                self._wake_r.close()
                self._wake_w.close()
                for sock in self._reserved:
                    sock.close()
                # With reuse_port the worker binds its own socket once its app has
                # started: a socket listening before that would queue connections
                # for a worker that may never serve them.
                code = run_worker(spec, self.socks, write_fd)
            except BaseException:  # noqa: BLE001 - a worker must never return into the master's code
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        now = time.monotonic()
        self.workers[pid] = _Worker(pid=pid, fd=read_fd, started=now, last_heartbeat=now, replaces=replaces)

    def _terminate(self, worker: _Worker) -> None:
        worker.stopping = True
        worker.kill_at = time.monotonic() + self.server.graceful_timeout + 2.0
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGTERM)

    def _kill(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except OSError as exc:  # pragma: no cover - EPERM cannot happen for our children
            if exc.errno != errno.ESRCH:
                raise

    def _stop_all(self) -> None:
        self.stopping = True
        self._hup_queue = []
        # The master's copy of the listening socket closes first: otherwise the
        # kernel would keep completing handshakes into the backlog for the whole
        # drain, and reset them all when the last copy closed. Each worker closes
        # its own on SIGTERM, after accepting what is already queued; from then on
        # a new connection is refused at once and goes to another instance.
        # (Inherited sockets, such as systemd's, outlive this process: no filter on them.)
        filtered = [
            s for s in self.socks if s.family != socket.AF_UNIX and not adopted(s) and stop_handshakes(s)
        ]
        if filtered:
            time.sleep(HANDSHAKE_GRACE)  # handshakes under way reach the queue first
        self._close_sockets()
        for worker in list(self.workers.values()):
            if not worker.stopping:
                self._terminate(worker)
