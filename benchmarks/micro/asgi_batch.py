"""Many hosted ASGI requests finishing in one loop iteration: how their answers are
written, and what a request costs, in instructions (callgrind).

CONNS in-memory connections (default 32) on one uvloop loop each get a request in
the same loop turn (as one poll's reads would), served by a raw ASGI app hosted by
veter that awaits once (``asyncio.sleep(0)``) before it answers, so on every Python
its task ends in a later iteration, all of them in the same one. Then the loop turns
until every connection is answered, and the next round begins.

- ``writes``: each answer's transport write, by the loop iteration it was made in
  and whether a task made it (written at once) or the end-of-iteration callback
  (``_write_later``): the first answer an iteration finishes goes out at once, the
  rest together at the iteration's end (docs/design.md).
- ``instructions``: per request, the difference of two runs (ROUNDS_LOW and
  ROUNDS_HIGH rounds) over the requests in between, with PYTHONHASHSEED fixed.

    .venv/bin/python benchmarks/micro/asgi_batch.py [CONNS ...]
"""

from __future__ import annotations

import asyncio
import collections
import gc
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from core_path import NullTransport  # noqa: E402
from instructions import _count  # noqa: E402

ROUNDS_LOW, ROUNDS_HIGH = 20, 120
_REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n\r\n"
_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await asyncio.sleep(0)  # the one await: the task ends in a later iteration
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": b"Hello, World!"})


class _Iterations:
    """Counts the loop's iterations: a callback that schedules itself again."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.count = 0
        self._loop = loop
        loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._loop.call_soon(self._tick)


class _Transport(NullTransport):
    """Keeps each write's note in ``log``: ``data`` itself (a list's ``append``, a C
    call), or, recording, (iteration, whether a task made it)."""

    def __init__(self, log: list[Any], iterations: _Iterations | None) -> None:
        super().__init__()
        if iterations is None:
            self.write = log.append  # type: ignore[method-assign]
        else:
            self.write = lambda data: log.append((iterations.count, asyncio.current_task() is not None))  # type: ignore[method-assign]


async def _drive(conns: int, rounds: int, record: bool) -> list[Any]:
    from veter.hosted import AsgiApp

    dispatcher = AsgiApp(_app).build_dispatcher()
    log: list[Any] = []
    iterations = _Iterations(asyncio.get_running_loop()) if record else None
    connections = []
    for _ in range(conns):
        conn = dispatcher()
        conn.connection_made(_Transport(log, iterations))
        connections.append(conn)
    gc.collect()
    gc.freeze()
    reads: list[Callable[[bytes], None]] = [conn.data_received for conn in connections]
    for _ in range(rounds):
        answered = len(log) + conns
        collections.deque(map(lambda read: read(_REQUEST), reads), maxlen=0)
        while len(log) < answered:  # every answer written (not only every task ended)
            await asyncio.sleep(0)
        if not record:
            log.clear()
    return log


def _writes(conns: int) -> str:
    import uvloop

    log = uvloop.run(_drive(conns, 3, record=True))
    rounds = []
    for i in range(3):
        batch = log[i * conns : (i + 1) * conns]
        first = batch[0][0]
        by_iteration = collections.Counter((it - first, "task" if in_task else "end") for it, in_task in batch)
        rounds.append(", ".join(f"+{it} {how} {n}" for (it, how), n in sorted(by_iteration.items())))
    return "; ".join(rounds)


def main() -> None:
    if "BATCH_CONNS" in os.environ:
        import uvloop

        uvloop.run(_drive(int(os.environ["BATCH_CONNS"]), int(os.environ["N"]), record=False))
        return
    script = Path(__file__).resolve()
    print(f"Python {sys.version.split()[0]}: writes per round (iteration from the first write, by whom, how many);")
    print("instructions per request")
    for conns in [int(a) for a in sys.argv[1:]] or [1, 32]:
        os.environ["BATCH_CONNS"] = str(conns)
        # Once outside callgrind first, so that both counted runs find the bytecode cached.
        subprocess.run([sys.executable, str(script)], env={**os.environ, "N": "1"}, check=True)
        low = _count(sys.executable, "", ROUNDS_LOW, script.name)
        high = _count(sys.executable, "", ROUNDS_HIGH, script.name)
        per_request = round((high - low) / ((ROUNDS_HIGH - ROUNDS_LOW) * conns))
        print(f"  {conns:3} connections: {per_request:>7,}   writes: {_writes(conns)}")
        del os.environ["BATCH_CONNS"]


if __name__ == "__main__":
    main()
