"""Drive the Python floor (benchmarks/apps/pyfloor.py) in memory, as core_path.py
drives veter's core: the same request bytes, reads made from C, writes into a C
function, so callgrind's counts of the two are comparable.

    benchmarks/.work/venv-peers/bin/python benchmarks/micro/instructions.py --floor

The floor makes one Python call per request (``on_message_complete``) and one write
per read; it routes nothing and builds no request object. Its count is the cost a
framework's whole request path is compared with.

``uvicorn_asgi`` is the peer of core_path.py's ``asgi`` instead: the same raw ASGI
app served by uvicorn's httptools protocol (one task per request, as uvicorn runs
it), driven the way core_path.py drives a request that becomes a task.
"""

from __future__ import annotations

import collections
import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "apps"))

from pyfloor import FloorProtocol  # type: ignore[import-not-found]

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n\r\n"
PER_READ = {"plaintext": 1, "pipelined": 16, "uvicorn_asgi": 1}


class NullTransport:
    def __init__(self) -> None:
        self.write: Callable[[bytes], None] = collections.deque[bytes](maxlen=0).append

    def close(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


_TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


async def _asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """core_path.py's raw ASGI app."""
    await send({"type": "http.response.start", "status": 200, "headers": _TEXT_HEADERS})
    await send({"type": "http.response.body", "body": b"Hello, World!"})


async def drive_uvicorn(reads: int) -> None:
    import asyncio

    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    config = Config(_asgi_app, http="httptools", lifespan="off", access_log=False, log_config=None)
    state = ServerState()
    # What uvicorn's server loop sets (and refreshes each second): every answer
    # carries them, as veter's carries its Server and Date lines.
    state.default_headers = [(b"server", b"uvicorn"), (b"date", b"Fri, 27 Nov 2026 02:00:00 GMT")]
    protocol = HttpToolsProtocol(config, state, {})
    transport: Any = NullTransport()
    protocol.connection_made(transport)
    data_received = protocol.data_received
    for _ in range(reads):
        data_received(REQUEST)
        while state.tasks:  # the request's task: let it end
            await asyncio.sleep(0)


async def drive(data: bytes, reads: int) -> None:
    protocol = FloorProtocol()
    transport: Any = NullTransport()
    protocol.connection_made(transport)
    collections.deque(map(protocol.data_received, itertools.repeat(data, reads)), maxlen=0)


def main() -> None:
    import uvloop

    scenario = os.environ.get("SCENARIO", "plaintext")
    reads = int(os.environ.get("N", "100000"))
    if scenario == "uvicorn_asgi":
        uvloop.run(drive_uvicorn(reads))
    else:
        uvloop.run(drive(REQUEST * PER_READ[scenario], reads))


if __name__ == "__main__":
    main()
