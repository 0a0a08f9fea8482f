"""Drive the core in memory: N reads of 16 pipelined requests each (no sockets).

Used under callgrind to count instructions per request, which is repeatable on a
shared machine where timings are not:

    benchmarks/micro/core_instructions.sh          # plaintext
    JSON=1 benchmarks/micro/core_instructions.sh   # a dict answered as JSON
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from middleware_cost import NullTransport, build

BATCHES = int(os.environ.get("N", "100000"))
JSON = os.environ.get("JSON") == "1"


async def main() -> None:
    app = build(0)
    app.add_route("/json", lambda request: {"message": "Hello, World!"})
    conn = app.build_dispatcher()()
    conn.connection_made(NullTransport())
    path = "/json" if JSON else "/"
    batch = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n\r\n".encode() * 16
    for _ in range(BATCHES):
        conn.data_received(batch)


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
