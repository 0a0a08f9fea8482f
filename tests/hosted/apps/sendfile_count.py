"""Counts the server process's ``os.sendfile`` calls and bytes (imported by the test
apps, which serve the count), so a test can tell a file that went out with
sendfile from one that passed through the process."""

from __future__ import annotations

import os
import threading
from typing import Any

counted = {"calls": 0, "bytes": 0}
_lock = threading.Lock()
_real = os.sendfile


def _counting(out_fd: int, in_fd: int, offset: Any, count: int, *args: Any, **kwargs: Any) -> int:
    n = _real(out_fd, in_fd, offset, count, *args, **kwargs)
    with _lock:
        counted["calls"] += 1
        counted["bytes"] += n
    return n


os.sendfile = _counting


def big_file(name: str, size: int) -> str:
    """A file of ``size`` bytes of a repeating, position-dependent pattern."""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"veter-{name}-{os.getpid()}.bin")
    with open(path, "wb") as fh:
        fh.write(pattern(size))
    return path


def pattern(size: int) -> bytes:
    """What ``big_file`` writes (a test recomputes it to compare)."""
    block = bytes(range(251)) * 4  # 1,004 bytes: no power of two lines up with it
    return (block * (size // len(block) + 1))[:size]
