"""Drive the Python floor (benchmarks/apps/pyfloor.py) in memory, as core_path.py
drives veter's core: the same request bytes, reads made from C, writes into a C
function, so callgrind's counts of the two are comparable.

    benchmarks/.work/venv-peers/bin/python benchmarks/micro/instructions.py --floor

The floor makes one Python call per request (``on_message_complete``) and one write
per read; it routes nothing and builds no request object. Its count is the cost a
framework's whole request path is compared with.
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
PER_READ = {"plaintext": 1, "pipelined": 16}


class NullTransport:
    def __init__(self) -> None:
        self.write: Callable[[bytes], None] = collections.deque[bytes](maxlen=0).append

    def close(self) -> None:
        pass


async def drive(data: bytes, reads: int) -> None:
    protocol = FloorProtocol()
    transport: Any = NullTransport()
    protocol.connection_made(transport)
    collections.deque(map(protocol.data_received, itertools.repeat(data, reads)), maxlen=0)


def main() -> None:
    import uvloop

    per_read = PER_READ[os.environ.get("SCENARIO", "plaintext")]
    uvloop.run(drive(REQUEST * per_read, int(os.environ.get("N", "100000"))))


if __name__ == "__main__":
    main()
