"""asyncmy vs aiomysql: queries per second through each driver's pool.

Starts a private MariaDB (tests/services.py) pinned to CPU 0, runs the client on
CPU 1, and for each driver and query runs CONCURRENCY tasks through a pool of
POOL_SIZE connections for SECONDS, interleaved (A B A B ...), RUNS times; prints
medians. Run from the repo root:

    flock /tmp/veter-quiet.lock taskset -c 1 .venv/bin/python benchmarks/micro/mysql_drivers.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiomysql
import asyncmy
from tests.services import MariaDB

ROWS = 10_000
POOL_SIZE = 10
CONCURRENCY = 50
QUERIES = {
    "one row": ("SELECT id, name, qty FROM items WHERE id = %s", lambda: (random.randint(1, ROWS),)),
    "100 rows": (
        "SELECT id, name, qty FROM items WHERE id BETWEEN %s AND %s + 99",
        lambda: (n := random.randint(1, ROWS - 100), n),
    ),
}

Connect = Callable[[], Awaitable[Any]]


async def drive(pool: Any, sql: str, args: Callable[[], tuple[int, ...]], seconds: float) -> float:
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            async with pool.acquire() as conn, conn.cursor() as cur:
                await cur.execute(sql, args())
                await cur.fetchall()
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return done / (time.monotonic() - started)


async def one(driver: str, port: int, query: str, seconds: float) -> float:
    kwargs = {"host": "127.0.0.1", "port": port, "user": "root", "db": "test", "autocommit": True}
    module: Any = asyncmy if driver == "asyncmy" else aiomysql
    pool = await module.create_pool(minsize=POOL_SIZE, maxsize=POOL_SIZE, **kwargs)
    try:
        sql, args = QUERIES[query]
        await drive(pool, sql, args, 0.5)  # warm-up
        return await drive(pool, sql, args, seconds)
    finally:
        pool.close()
        await pool.wait_closed()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    opts = parser.parse_args()
    server = MariaDB()
    server.start()
    try:
        if server.proc is not None:
            subprocess.run(["taskset", "-a", "-p", "-c", "0", str(server.proc.pid)], check=True, capture_output=True)
        server.sql(
            "CREATE TABLE test.items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL);"
            f"INSERT INTO test.items SELECT seq, CONCAT('item-', seq), seq % 97 FROM test.seq_1_to_{ROWS};"
        )
        print(f"client on CPUs {sorted(os.sched_getaffinity(0))}, pool {POOL_SIZE}, {CONCURRENCY} tasks")
        results: dict[tuple[str, str], list[float]] = {}
        for run in range(opts.runs):
            for query in QUERIES:
                for driver in ("asyncmy", "aiomysql"):
                    qps = asyncio.run(one(driver, server.port, query, opts.seconds))
                    results.setdefault((driver, query), []).append(qps)
                    print(f"run {run + 1} {query:9} {driver:9} {qps:8.0f} queries/s", flush=True)
        print("\nmedians:")
        for query in QUERIES:
            a = statistics.median(results[("asyncmy", query)])
            b = statistics.median(results[("aiomysql", query)])
            print(f"  {query:9} asyncmy {a:8.0f}/s  aiomysql {b:8.0f}/s  ratio {a / b:.2f}")
    finally:
        server.close()


if __name__ == "__main__":
    main()
