"""Rotation of log files by size and by age, done by one process (the master).

Rotating renames ``name`` to ``name.1`` (after shifting ``name.1`` to ``name.2`` and
so on, deleting what falls past ``backups``); the caller then has every process
reopen its files (the master signals its workers). A line written between the
rename and the reopen lands in ``name.1``: none is lost or cut.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable

__all__ = ["Rotator"]

log = logging.getLogger("veter.logs")


class Rotator:
    """Watches ``paths``; ``check()`` rotates those due and says whether any was."""

    def __init__(
        self, paths: Iterable[str], *, max_bytes: int = 0, interval: float = 0.0, backups: int = 7
    ) -> None:
        if max_bytes < 0 or interval < 0:
            raise ValueError("max_bytes and interval must be >= 0")
        if backups < 1:
            raise ValueError("backups must be at least 1")
        self.paths = list(dict.fromkeys(paths))
        self.max_bytes = max_bytes
        self.interval = interval
        self.backups = backups
        now = time.monotonic()
        self._since = dict.fromkeys(self.paths, now)
        #: Rotations done so far (all paths).
        self.rotations = 0

    @property
    def enabled(self) -> bool:
        return bool(self.paths) and (self.max_bytes > 0 or self.interval > 0)

    def due(self, path: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if self.interval and now - self._since[path] >= self.interval:
            return True
        if self.max_bytes:
            try:
                return os.stat(path).st_size >= self.max_bytes
            except FileNotFoundError:
                return False
        return False

    def check(self) -> bool:
        """Rotate every path that is due; True when at least one was (reopen then)."""
        if not self.enabled:
            return False
        rotated = False
        now = time.monotonic()
        for path in self.paths:
            if self.due(path, now):
                rotated = self.rotate(path) or rotated
                self._since[path] = now
        return rotated

    def rotate(self, path: str) -> bool:
        """``path`` -> ``path.1``, ``path.1`` -> ``path.2``, ...; the oldest beyond
        ``backups`` is deleted; returns whether it rotated. The caller reopens files
        afterwards. A missing or empty file is left alone (nothing to keep; the
        writers may not have reopened since the last rotation)."""
        try:
            if os.stat(path).st_size == 0:
                return False
        except FileNotFoundError:
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}.{self.backups}")
        for n in range(self.backups - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{path}.{n}", f"{path}.{n + 1}")
        try:
            os.rename(path, f"{path}.1")
        except FileNotFoundError:
            return False
        self.rotations += 1
        log.debug("rotated %s", path)
        return True
