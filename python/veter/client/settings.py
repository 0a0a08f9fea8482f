"""The client's timeouts and retry policy: plain frozen values, checked when made."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["IDEMPOTENT_METHODS", "Retries", "Timeouts"]

#: Methods that may be sent twice without changing the outcome (RFC 9110, 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


def _seconds(name: str, value: float) -> None:
    if not isinstance(value, int | float) or not value > 0 or math.isinf(value):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")


@dataclass(frozen=True)
class Timeouts:
    """Every timeout of a request; none can be infinite.

    - ``dns``: resolving the host name (asynchronous; its own timeout).
    - ``connect``: opening one TCP connection (each address tried).
    - ``read``: the longest wait for the next bytes of the response once the request
      is sent (a silent server trips it; a trickling one does not, see ``total``).
    - ``total``: the whole call, from the first attempt to the last body byte,
      retries and backoff included.
    """

    connect: float = 5.0
    read: float = 30.0
    total: float = 60.0
    dns: float = 5.0

    def __post_init__(self) -> None:
        for name in ("connect", "read", "total", "dns"):
            _seconds(f"Timeouts.{name}", getattr(self, name))


@dataclass(frozen=True)
class Retries:
    """Opt-in retries, with exponential backoff and jitter, for idempotent methods only.

    A request is tried up to ``attempts`` times in all when it failed to connect,
    timed out (dns, connect or read; never once ``total`` has passed), lost its
    connection, or answered one of ``statuses``. The n-th retry waits a random time
    between half and all of ``backoff * 2**(n-1)``, at most ``max_backoff``.
    """

    attempts: int = 3
    backoff: float = 0.05
    max_backoff: float = 1.0
    statuses: frozenset[int] = frozenset({502, 503, 504})
    methods: frozenset[str] = field(default=IDEMPOTENT_METHODS)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"Retries.attempts must be at least 1, got {self.attempts}")
        _seconds("Retries.backoff", self.backoff)
        _seconds("Retries.max_backoff", self.max_backoff)
