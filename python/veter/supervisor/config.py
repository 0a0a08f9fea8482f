"""The master's settings: one dataclass, read by ``veter run`` like the server's
(flags > ``VETER_*`` > config file > defaults) and given to the master as is."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from veter.options import check, setting

__all__ = ["MasterConfig", "usable_cpus"]


@dataclass(frozen=True)
class MasterConfig:
    """The master's settings, as ``veter run`` reads them (flags, ``VETER_*``, the
    config file; docs/guide.md, "Process model"), in the units users give them."""

    workers: int | Literal["auto"] = setting(
        1, "Worker processes, or 'auto' for one per CPU this process may use.", ge=1, metavar="N|auto"
    )
    worker_timeout: float = setting(
        30.0, "Seconds a worker's loop may stall (no heartbeat) before it is dumped and replaced.", gt=0
    )
    max_requests: int = setting(0, "Recycle a worker after this many requests (0: never).", ge=0)
    max_requests_jitter: int = setting(
        0, "Up to this many more requests, per worker, so they do not recycle together.", ge=0
    )
    max_rss: int = setting(0, "Recycle a worker whose resident memory passes this many MiB (0: never).", ge=0)
    max_lifetime: float = setting(0.0, "Recycle a worker after this many seconds (0: never).", ge=0)
    reuse_port: bool = setting(
        False, "Each worker binds its own SO_REUSEPORT socket instead of sharing the master's."
    )

    def __post_init__(self) -> None:
        if self.workers != "auto" and (isinstance(self.workers, bool) or not isinstance(self.workers, int)):
            raise ValueError(f"workers must be a number or 'auto', not {self.workers!r}")
        check(self)

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
