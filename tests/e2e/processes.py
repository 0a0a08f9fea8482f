"""`veter run` as a child process, with its log lines watched by a thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"veter serving on https?://127\.0\.0\.1:(\d+)")


class Proc:
    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        cwd: Path = ROOT,
        *,
        pass_fds: tuple[int, ...] = (),
        command: list[str] | None = None,
    ) -> None:
        """``veter ARGS`` (or ``command``, whole), with ``pass_fds`` inherited."""
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", "veter", *args],
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            pass_fds=pass_fds,
        )
        self.lines: list[str] = []
        self.port: int | None = None
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line)
                match = READY.search(line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                self._changed.notify_all()
        with self._changed:
            self.lines.append("<eof>")
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30, start: int = 0) -> re.Match[str]:
        """The first log line from index ``start`` matching ``pattern``."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[start:]:
                    match = regex.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.lines and self.lines[-1] == "<eof>"):
                    raise TimeoutError(f"no line matching {pattern!r}:\n{self.output()}")
                self._changed.wait(left)

    def wait_ready(self, timeout: float = 30) -> int:
        self.wait_for(READY.pattern, timeout)
        assert self.port is not None
        return self.port

    def wait_for_each(self, pattern: str, count: int, start: int = 0, timeout: float = 30) -> None:
        """``count`` log lines from index ``start`` matching ``pattern``."""
        for _ in range(count):
            match = self.wait_for(pattern, timeout=timeout, start=start)
            start = self.lines.index(match.string) + 1

    def mark(self) -> int:
        """An index into the log, for ``wait_for(..., start=mark)``."""
        with self._changed:
            return len(self.lines)

    def output(self) -> str:
        return "".join(line for line in self.lines if line != "<eof>")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def children_of(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_workers_ready(proc: Proc, count: int) -> None:
    proc.wait_for_each(r"worker \d+ ready", count)


def wait_until(predicate: object, timeout: float) -> float:
    """Polls ``predicate()`` until true; returns how long it took."""
    start = time.monotonic()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() - start > timeout:
            raise TimeoutError("condition not met")
        time.sleep(0.01)
    return time.monotonic() - start
