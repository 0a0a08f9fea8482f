"""Micro-benchmark: what middleware costs per request, and that none costs nothing.

Drives the Rust protocol directly (no sockets, no load generator): 64 pipelined
requests per data_received into a transport whose write() only counts bytes.
Compares the same handler with no middleware, with 1, and with 3 pass-through
middlewares, and shows that with none the core calls the handler object itself.

Run: .venv/bin/python benchmarks/micro/middleware_cost.py   (pin with taskset -c 0)
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import veter
from core_path import NullTransport
from veter.routing import compose

BATCH = 64
ROUNDS = 400
REPEATS = 7


def plaintext(request: veter.Request) -> str:
    return "Hello, World!"


async def passthrough(request: veter.Request, call_next: Any) -> Any:
    return await call_next(request)


def build(middlewares: int) -> veter.App:
    app = veter.App()
    for _ in range(middlewares):
        app.middleware(passthrough)
    app.add_route("/", plaintext)
    return app


async def measure(app: veter.App) -> float:
    """Median nanoseconds per request over REPEATS runs."""
    dispatcher = app.build_dispatcher()
    conn = dispatcher()
    transport = NullTransport()
    conn.connection_made(transport)
    batch = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n" * BATCH
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        for _ in range(ROUNDS):
            conn.data_received(batch)
            while conn.in_flight:  # middleware chains are async: let them finish
                await asyncio.sleep(0)
        samples.append((time.perf_counter_ns() - start) / (ROUNDS * BATCH))
    conn.connection_lost(None)
    return statistics.median(samples)


async def main() -> None:
    route = build(0).routes[0]
    target, is_async = compose(route, [], build(0).handle_error)
    assert target is plaintext and not is_async, "with no middleware the core must call the handler itself"
    results = {n: await measure(build(n)) for n in (0, 1, 3)}
    print(f"{'middlewares':>12} {'ns/request':>12} {'vs none':>8}")
    for n, ns in results.items():
        print(f"{n:>12} {ns:>12.0f} {ns / results[0]:>7.2f}x")


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
