"""The master's settings: one dataclass, read by ``veter run`` like the server's
(flags > ``VETER_*`` > config file > defaults) and given to the master as is."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = ["MasterConfig", "usable_cpus"]


@dataclass(frozen=True)
class MasterConfig:
    """The master's settings, as ``veter run`` reads them (flags, ``VETER_*``, the
    config file; docs/guide.md, "Process model"), in the units users give them."""

    #: Worker processes, or "auto": one per CPU this process may run on.
    workers: int | Literal["auto"] = 1
    #: Seconds without a heartbeat before a worker is dumped and replaced.
    worker_timeout: float = 30.0
    #: Recycle a worker after this many requests (0: never), plus up to jitter more.
    max_requests: int = 0
    max_requests_jitter: int = 0
    #: Recycle a worker whose RSS passes this many MiB (0: never).
    max_rss: int = 0
    #: Recycle a worker alive for longer than this many seconds (0: never).
    max_lifetime: float = 0.0
    #: Each worker binds its own SO_REUSEPORT socket instead of sharing the master's.
    reuse_port: bool = False

    def __post_init__(self) -> None:
        if self.workers != "auto" and (isinstance(self.workers, bool) or not isinstance(self.workers, int)):
            raise ValueError(f"workers must be a number or 'auto', not {self.workers!r}")
        if self.workers != "auto" and self.workers < 1:
            raise ValueError("workers must be at least 1")
        if not self.worker_timeout > 0:
            raise ValueError("worker_timeout must be a positive number of seconds")
        for name in ("max_requests", "max_requests_jitter", "max_rss"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.max_lifetime < 0:
            raise ValueError("max_lifetime must be >= 0")

    @property
    def worker_count(self) -> int:
        """``workers``, with "auto" counted."""
        return usable_cpus() if self.workers == "auto" else self.workers


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's cpuset, taskset), not the
    machine's: what ``--workers auto`` starts one worker for each of."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity API (macOS)
        return os.cpu_count() or 1
