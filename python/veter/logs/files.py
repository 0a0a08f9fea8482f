"""Log destinations: ``"-"`` (stdout), ``"stderr"``, or a path opened for appending.

Every ``LogFile`` this process opens is remembered, so one signal (or the master's
rotation) reopens them all.
"""

from __future__ import annotations

import logging
import weakref

from veter._core import LogFile

__all__ = ["open_log", "reopen_all"]

log = logging.getLogger("veter.logs")

_open: weakref.WeakSet[LogFile] = weakref.WeakSet()


def open_log(destination: str, *, buffer_bytes: int = 65536) -> LogFile:
    """A ``LogFile`` for ``destination``: ``"-"`` is stdout, ``"stderr"`` is stderr,
    anything else a path (created if missing, appended to)."""
    target: int | str
    if destination == "-":
        target = 1
    elif destination == "stderr":
        target = 2
    else:
        target = destination
    logfile = LogFile(target, buffer_bytes=buffer_bytes)
    _open.add(logfile)
    return logfile


def reopen_all() -> None:
    """Write what is buffered, then reopen every log file by its path (after the
    files were renamed by rotation or logrotate)."""
    for logfile in list(_open):
        try:
            logfile.reopen()
        except OSError:
            log.exception("could not reopen log file %s", logfile.path)
