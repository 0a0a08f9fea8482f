"""Start a server pinned to the server CPU, wait until it answers, account its CPU, stop it."""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import h2c, paths

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class StartError(RuntimeError):
    """The server exited or never answered; the message carries its log tail."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_status(port: int, path: str, timeout: float = 1.0) -> int | None:
    """One GET over a fresh connection; the status code, or None if nothing answered."""
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(request.encode())
            head = sock.recv(64)
    except OSError:
        return None
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return None
    return int(parts[1])


def _threads_run_ns(pid: str) -> int:
    """Nanoseconds the live threads of ``pid`` have run."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total


@dataclass
class Running:
    argv: list[str]
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        """CPU time of every live thread of every process in the server's process
        group, to the nanosecond (the first field of /proc/<pid>/task/<tid>/schedstat:
        the scheduler's own run time, the figure utime + stime are scaled to), plus the
        leader's reaped children (cutime + cstime, in clock ticks). utime + stime alone
        come in 10 ms ticks: at 2,000 req/s a 10 s cell's ~0.3 s had ~5% of noise in
        rounding. A thread that exits within a cell takes its time with it; no server
        here starts or ends threads while it serves."""
        nanos, ticks = 0, 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            if int(fields[2]) != self.pgid:
                continue
            nanos += _threads_run_ns(entry)
            if int(entry) == self.pgid:
                ticks += int(fields[13]) + int(fields[14])
        return nanos / 1e9 + ticks / CLOCK_TICKS

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the whole group (so forked workers go too), then SIGKILL stragglers."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(self.pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(self.pgid):
                self.proc.poll()
                time.sleep(0.05)
            if not _group_alive(self.pgid):
                break
        self.proc.wait(timeout=5)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Zombies still count for killpg; a group whose only member is our reaped leader is gone.
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def start(
    argv: list[str],
    port: int,
    ready_path: str,
    log: Path,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 30.0,
    cpus: str | None = None,
    probe: Callable[[int, str], int | None] = http_status,
) -> Running:
    """Start `argv` on the server CPU in its own session and poll until `ready_path` gives 200
    (asked by `probe`: HTTP/1.1 unless another is named, such as h2c.status)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PORT": str(port), **env}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["taskset", "-c", cpus or paths.SERVER_CPU, *argv],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Running(argv=argv, proc=proc, port=port, log=log)
    deadline = time.monotonic() + timeout
    last: int | str | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            running.stop()
            raise StartError(f"exited with {proc.returncode}: {running.log_tail()}")
        try:
            last = probe(port, ready_path)
        except h2c.NotHttp2 as exc:
            last = str(exc)
        if last == 200:
            return running
        time.sleep(0.05)
    running.stop()
    raise StartError(f"no 200 on {ready_path} within {timeout:.0f}s (last status {last}): {running.log_tail()}")
