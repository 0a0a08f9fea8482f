"""`--reload`: restart the workers when source files change (development only)."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

__all__ = ["start_reloader"]

log = logging.getLogger("veter.reload")


def start_reloader(root: Path) -> threading.Event:
    """Watch ``root`` for changed Python files and send the master SIGHUP (a rolling
    restart: new workers import the changed code; if it does not import, the old
    workers stay). Returns the event that stops the watcher."""
    from watchfiles import PythonFilter, watch

    stop = threading.Event()
    master = os.getpid()

    def run() -> None:
        for changes in watch(root, watch_filter=PythonFilter(), stop_event=stop, raise_interrupt=False):
            names = sorted({Path(path).name for _, path in changes})
            log.info("changed: %s; restarting workers", ", ".join(names))
            os.kill(master, signal.SIGHUP)

    threading.Thread(target=run, name="veter-reload", daemon=True).start()
    return stop
