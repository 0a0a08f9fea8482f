"""How far a hosted ASGI request is from its floor, in instructions (callgrind).

The raw app of benchmarks/apps/asgi_raw.py (plaintext at ``/``, ``json.dumps`` at
``/json``) served in memory four ways, each driven alike (a request, then loop turns
until it is done), each count the difference of two runs (200 and 2,200 requests)
per request, with PYTHONHASHSEED fixed:

- ``veter``: hosted by veter (``AsgiApp``), as ``veter run`` hosts it;
- ``uvicorn``: uvicorn's httptools protocol (one task per request);
- ``task``: a bare ``asyncio.Task`` running the app on a minimal scope (a dict
  literal) with a ``send`` that completes at once: no HTTP at all, the floor of any
  server that runs each request in an asyncio task;
- ``task_id``: ``task`` with a request id in the task's context, put there as veter
  puts its request (a context variable set, the task made, the variable reset): the
  floor of a server whose request ids follow the request into every task it spawns;
- ``task_calls``: ``task`` with the same two calls made to a C function that does
  nothing (``callable``), so that ``task_id - task_calls`` is the context's own work,
  without the bytecode that makes the two calls (which veter, calling from Rust, does
  not run);
- ``driver``: the driver's loop turn alone, to take out of the others.

    .venv/bin/python benchmarks/micro/asgi_bound.py [MODULE:APP]

MODULE:APP is another app of benchmarks/apps (``fastapi_app:app``, say), counted
served by veter and by uvicorn only (the bare task's ``receive`` and ``send`` are
the raw app's). Needs uvicorn and httptools (veter's dev venv has them).

benchmarks/notes/asgi.md (History, "What the 2.0x uvicorn and 1.3x FastAPI targets ask
of one request") turns these counts and the kernel's share of a request
(cpu_split.py) into what a throughput ratio to uvicorn can reach.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "apps"))

from instructions import HIGH, LOW, _count  # noqa: E402

RAW = "asgi_raw:app"
MODES = ("veter", "uvicorn", "task", "task_id", "task_calls", "driver")
PATHS = ("/", "/json")


class _Done:
    """What the floor's ``send`` returns: completes at once, no frame of its own."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())


_DONE = _Done()

#: The request id of the ``task_id`` floor (veter's is ``veter.context.request_var``,
#: which holds the request). One value for every request: the count is the context's
#: work alone.
_REQUEST_ID: contextvars.ContextVar[object] = contextvars.ContextVar("request_id")
_AN_ID = object()


def _send(message: object) -> _Done:
    return _DONE


def _receive() -> _Done:
    return _DONE


def _scope(path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:40000")],
        "client": None,
        "server": None,
        "state": {},
    }


async def _drive(spec: str, mode: str, path: str, requests: int) -> None:
    module, _, name = spec.partition(":")
    app = getattr(importlib.import_module(module), name)
    loop = asyncio.get_running_loop()
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n\r\n".encode()
    busy: Callable[[], bool]
    feed: Callable[[], object]
    if mode == "veter":
        from core_path import NullTransport
        from veter.hosted import AsgiApp

        conn = AsgiApp(app).build_dispatcher()()
        conn.connection_made(NullTransport())
        busy = lambda: bool(conn.in_flight)  # noqa: E731
        feed = lambda: conn.data_received(request)  # noqa: E731
    elif mode == "uvicorn":
        from floor_path import NullTransport as UvicornTransport
        from uvicorn.config import Config
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        from uvicorn.server import ServerState

        state = ServerState()
        # What uvicorn's server loop sets (and refreshes each second): every answer
        # carries them, as veter's carries its Server and Date lines.
        state.default_headers = [(b"server", b"uvicorn"), (b"date", b"Fri, 27 Nov 2026 02:00:00 GMT")]
        config = Config(app, http="httptools", lifespan="off", access_log=False, log_config=None)
        protocol = HttpToolsProtocol(config, state, {})
        protocol.connection_made(UvicornTransport())  # type: ignore[arg-type]
        busy = lambda: bool(state.tasks)  # noqa: E731
        feed = lambda: protocol.data_received(request)  # noqa: E731
    else:
        kwargs: dict[str, Any] = {"loop": loop, "name": "floor"}
        if sys.version_info >= (3, 12):
            kwargs["eager_start"] = True
        run: Callable[[dict[str, Any]], Awaitable[None]] = app
        last: list[asyncio.Task[None]] = []

        # task_id and task_calls run the same bytecode: two calls of a closure variable around
        # the task's making; only what is called differs.
        set_id: Callable[[object], object] = _REQUEST_ID.set if mode == "task_id" else callable
        reset_id: Callable[[Any], object] = _REQUEST_ID.reset if mode == "task_id" else callable

        def start() -> None:
            if mode == "task":
                last[:] = [asyncio.Task(run(_scope(path), _receive, _send), **kwargs)]  # type: ignore[call-arg]
            elif mode in ("task_id", "task_calls"):
                token = set_id(_AN_ID)
                last[:] = [asyncio.Task(run(_scope(path), _receive, _send), **kwargs)]  # type: ignore[call-arg]
                reset_id(token)

        busy = lambda: bool(last) and not last[0].done()  # noqa: E731
        feed = start
    for _ in range(requests):
        feed()
        while True:  # at least one loop turn per request, as the other modes take
            await asyncio.sleep(0)
            if not busy():
                break


def count(app: str, mode: str, path: str) -> int:
    """Instructions per request of ``app`` served by ``mode``, at ``path``."""
    script = Path(__file__).resolve()
    env_base = {**os.environ, "ASGI_BOUND": f"{app} {mode} {path}"}
    os.environ.update(env_base)
    subprocess.run([sys.executable, str(script)], env={**env_base, "N": "1"}, check=True, capture_output=True)
    low = _count(sys.executable, "", LOW, script.name)
    high = _count(sys.executable, "", HIGH, script.name)
    return round((high - low) / (HIGH - LOW))


def main() -> None:
    import uvloop

    spec = os.environ.get("ASGI_BOUND")
    if spec:
        app, mode, path = spec.split(" ", 2)
        uvloop.run(_drive(app, mode, path, int(os.environ.get("N", "1000"))))
        return
    app = sys.argv[1] if len(sys.argv) > 1 else RAW
    modes = MODES if app == RAW else ("veter", "uvicorn", "driver")
    counts = {(mode, path): count(app, mode, path) for mode in modes for path in PATHS}
    print(f"{app}, Python {sys.version.split()[0]}, instructions per request (the driver's loop turn included):")
    for (mode, path), n in counts.items():
        print(f"  {mode:8} {path:6} {n:>8,}")
    print("without the driver's turn:")
    for path in PATHS:
        turn = counts["driver", path]
        row = ", ".join(f"{mode} {counts[mode, path] - turn:,}" for mode in modes if mode != "driver")
        print(f"  {path:6} {row}")
    if app == RAW:
        print("veter's share over the bare task, and over the bare task with a request id in its context:")
        for path in PATHS:
            context = counts["task_id", path] - counts["task_calls", path]
            share = counts["veter", path] - counts["task", path]
            print(f"  {path:6} {share:,} over task; context {context:,}; {share - context:,} over task + id")


if __name__ == "__main__":
    main()
