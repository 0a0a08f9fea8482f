"""A real veter server on a background thread, for tests over real sockets.

Readiness is the server's own signal (it has bound and is listening), never a sleep.
On teardown the fixture checks for leaks: no connection left in the dispatcher, no
task left on the loop, and as many open file descriptors as before the server.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import veter
from veter.config import ServerConfig
from veter.loops import loop_factory
from veter.server import Server
from veter.testing import TestResponse, _ResponseReader

from .processes import Proc, children_of


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def assert_no_fd_leak(baseline: int) -> None:
    """Fails when more descriptors are open than at ``baseline``. Garbage from
    earlier tests (an unreferenced socket) may be collected in between, so fewer
    is fine; what is unreachable is collected first so it does not count."""
    gc.collect()
    assert open_fds() <= baseline, f"file descriptors leaked: {open_fds()} open, {baseline} before"


class RunningServer:
    def __init__(self, app: veter.App, config: ServerConfig) -> None:
        self.app = app
        self.config = config
        self.server: Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.leftover_tasks: list[asyncio.Task[Any]] = []
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="veter-test-server", daemon=True)

    def _main(self) -> None:
        loop = loop_factory(self.config.loop)()
        self.loop = loop
        try:
            self.server = Server(self.app, self.config)
            loop.run_until_complete(self.server.start())
            self._ready.set()
            loop.run_until_complete(self.server.serve_forever())
            loop.run_until_complete(self.server.stop())
            loop.run_until_complete(asyncio.sleep(0))
            self.leftover_tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            self.error = exc
        finally:
            self._ready.set()
            loop.close()

    def start(self) -> RunningServer:
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("server did not start in 30 s")
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        if self.loop is not None and self.server is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.server.request_stop)
        self._thread.join(60)
        assert not self._thread.is_alive(), "server thread did not stop"
        if self.error is not None:
            raise self.error

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    def connect(self, timeout: float = 10.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


@pytest.fixture(scope="session", autouse=True)
def _warm_process_globals() -> None:
    """uvloop opens a pipe pair once per process, on first use, and keeps it; start and
    stop one server first so the per-test descriptor count compares like with like."""
    app = veter.App()
    RunningServer(app, app.config.with_(port=0)).start().stop()


@pytest.fixture
def master() -> Iterator[Callable[..., Proc]]:
    """Starts ``veter run`` of the supervisor test app (tests/e2e/apps/supervised.py)
    with the given options; kills what is left of each afterwards."""
    procs: list[Proc] = []

    def start(*args: str) -> Proc:
        proc = Proc(["run", "tests.e2e.apps.supervised:app", "--port", "0", *args])
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., RunningServer]]:
    """``serve(app, **settings)`` starts a server on a free port; teardown stops it
    and fails the test on leaked connections, tasks or file descriptors."""
    started: list[tuple[RunningServer, int]] = []

    def start(app: veter.App, **settings: Any) -> RunningServer:
        fds = open_fds()
        # No access log on pytest's stdout unless a test asks for one.
        settings.setdefault("access_log", None)
        config = app.config.with_(host="127.0.0.1", port=0, **settings)
        running = RunningServer(app, config).start()
        started.append((running, fds))
        return running

    yield start
    for running, _fds in started:
        running.stop()
        assert running.server is not None and running.server.dispatcher is not None
        assert running.server.dispatcher.connection_count == 0, "connections leaked"
        assert running.leftover_tasks == [], f"tasks leaked: {running.leftover_tasks}"
    if started:
        assert_no_fd_leak(started[0][1])


def read_responses(
    sock: socket.socket, count: int, *, head: bool | list[bool] = False, timeout: float = 10.0
) -> tuple[list[TestResponse], bool]:
    """Read ``count`` responses (``head``: which answer HEAD requests); returns them
    and whether the server closed."""
    sock.settimeout(timeout)
    heads = head if isinstance(head, list) else [head] * count
    data = b""
    out: list[TestResponse] = []
    closed = False
    while len(out) < count:
        parsed = _ResponseReader(heads[len(out)]).parse(data, closed)
        if parsed is not None:
            out.append(parsed[0])
            data = data[parsed[1] :]
            continue
        if closed:
            break
        chunk = sock.recv(65536)
        if not chunk:
            closed = True
        data += chunk
    return out, closed


def wait_closed(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Read until the server closes the connection; returns what came before."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
