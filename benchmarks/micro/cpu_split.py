"""Where a saturated worker's time per request goes: user and kernel CPU.

Each server runs with one worker pinned to CPU 0; wrk (`-t1 -c100`, pinned to CPU
1) saturates it for a warm-up and then for the measured window, over which the
worker's utime and stime (/proc/PID/stat) are divided by the requests wrk counted.
Servers and paths are interleaved, several rounds, medians printed.

    .venv/bin/python benchmarks/micro/cpu_split.py [ROUNDS]

The kernel's part (read, write, epoll, the loopback TCP stack) is the same per
request for every server that does one read and one write per request (strace -c:
veter and uvicorn both do); it bounds the ratio any user-space work can reach.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "benchmarks" / "apps"
VETER = str(ROOT / ".venv" / "bin" / "python")
PEERS = ROOT / "benchmarks" / ".work" / "venv-peers" / "bin"
WARM, WINDOW = 2, 10

SERVERS = {
    "veter-asgi": [VETER, "-m", "veter", "run", "asgi_raw:app", "--access-log", "off", "--lifespan", "off"],
    "uvicorn": [
        str(PEERS / "uvicorn"),
        "asgi_raw:app",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
        "--lifespan",
        "off",
    ],
    "veter": [VETER, "-m", "veter", "run", "veter_app:app", "--access-log", "off"],
}
PATHS = ("/", "/json")


def _argv(name: str, port: int) -> list[str]:
    extra = ["--host", "127.0.0.1", "--port", str(port)]
    return [*SERVERS[name], *extra, *(["--workers", "1"] if name.startswith("veter") else [])]


def _ready(port: int, deadline: float) -> None:
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _worker(pid: int) -> int:
    """The process that serves: veter's one worker, or uvicorn itself."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(children[0]) if children else pid


def _cpu(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _wrk(port: int, path: str, seconds: int) -> int:
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", "-c100", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"(\d+) requests in", out)
    if match is None or "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk: {out}")
    return int(match.group(1))


def measure(name: str, port: int) -> dict[str, tuple[float, float, float]]:
    """{path: (req/s, user µs/request, kernel µs/request)} of one server."""
    env = {**os.environ, "PYTHONPATH": str(APPS)}
    proc = subprocess.Popen(
        ["taskset", "-c", "0", *_argv(name, port)],
        cwd=APPS,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _ready(port, time.monotonic() + 20)
        pid = _worker(proc.pid)
        cells = {}
        for path in PATHS:
            _wrk(port, path, WARM)
            user0, sys0 = _cpu(pid)
            requests = _wrk(port, path, WINDOW)
            user1, sys1 = _cpu(pid)
            cells[path] = (requests / WINDOW, (user1 - user0) / requests * 1e6, (sys1 - sys0) / requests * 1e6)
        return cells
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for n in range(rounds):
        for i, name in enumerate(SERVERS):
            for path, cell in measure(name, 8300 + 10 * n + i).items():
                runs.setdefault((name, path), []).append(cell)
                print(
                    f"round {n + 1} {name:10} {path:5} {cell[0]:9,.0f} req/s  "
                    f"user {cell[1]:5.2f}  kernel {cell[2]:5.2f} µs/request",
                    flush=True,
                )
    print("\nmedians:")
    print("| server | path | req/s | user µs/req | kernel µs/req | total |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (name, path), cells in runs.items():
        rate, user, kernel = (statistics.median(c[k] for c in cells) for k in range(3))
        print(f"| {name} | {path} | {rate:,.0f} | {user:.2f} | {kernel:.2f} | {user + kernel:.2f} |")


if __name__ == "__main__":
    main()
