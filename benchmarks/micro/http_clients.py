"""aiohttp's client vs httpx: requests per second over keep-alive connections.

Serves a small JSON answer with veter (`veter run`, pinned to CPU 0), then drives it
from this process (run it pinned to CPU 1) with each client: CONCURRENCY tasks share
one session limited to CONNECTIONS keep-alive connections, for SECONDS, interleaved
(A B A B ...), RUNS times; prints medians. Run from the repo root:

    flock /tmp/veter-quiet.lock taskset -c 1 .venv/bin/python benchmarks/micro/http_clients.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import httpx
import uvloop

REPO = Path(__file__).resolve().parents[2]
CONCURRENCY = int(os.environ.get("CONCURRENCY", "64"))
CONNECTIONS = 16


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def drive(call: Callable[[], Awaitable[None]], seconds: float) -> float:
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            await call()
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return done / (time.monotonic() - started)


async def with_aiohttp(url: str, seconds: float) -> float:
    connector = aiohttp.TCPConnector(limit=CONNECTIONS, limit_per_host=CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call() -> None:
            async with session.get(url) as response:
                await response.json()

        await drive(call, 0.5)
        return await drive(call, seconds)


async def with_httpx(url: str, seconds: float) -> float:
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(limits=limits) as client:

        async def call() -> None:
            response = await client.get(url)
            response.json()

        await drive(call, 0.5)
        return await drive(call, seconds)


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("veter did not start") from None
            time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    opts = parser.parse_args()
    port = free_port()
    argv = ["taskset", "-c", "0", sys.executable, "-m", "veter", "run", "benchmarks.apps.veter_app:app"]
    server = subprocess.Popen([*argv, "--host", "127.0.0.1", "--port", str(port)], cwd=REPO)
    try:
        wait_listening(port, server)
        url = f"http://127.0.0.1:{port}/json"
        clients = {"aiohttp": with_aiohttp, "httpx": with_httpx}
        results: dict[str, list[float]] = {name: [] for name in clients}
        print(f"{CONCURRENCY} tasks over {CONNECTIONS} keep-alive connections, GET /json")
        for run in range(opts.runs):
            for name, client in clients.items():
                rps = uvloop.run(client(url, opts.seconds))
                results[name].append(rps)
                print(f"run {run + 1} {name:8} {rps:8.0f} req/s", flush=True)
        a, b = statistics.median(results["aiohttp"]), statistics.median(results["httpx"])
        print(f"\nmedians: aiohttp {a:.0f} req/s, httpx {b:.0f} req/s, ratio {a / b:.2f}")
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
