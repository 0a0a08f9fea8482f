"""What a handler sees when a pool cannot give it a connection: 503 with Retry-After.

Both are ``veter.HTTPException`` subclasses, so an unhandled one answers the request
with ``503 Service Unavailable`` and a ``Retry-After`` header; the message (``str(exc)``)
names the pool and the cause, for logs, and is not sent to the client.
"""

from __future__ import annotations

from veter.exceptions import HTTPException

__all__ = ["PoolError", "PoolTimeout", "PoolUnavailable"]


class PoolError(HTTPException):
    """A pool could not provide a connection; answers 503 with ``Retry-After``."""

    def __init__(self, message: str, *, pool: str, retry_after: int) -> None:
        super().__init__(503, "Service Unavailable", {"Retry-After": str(retry_after)})
        self.message = message
        self.pool = pool

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class PoolTimeout(PoolError):
    """Every connection stayed busy for longer than the pool's ``acquire_timeout``."""


class PoolUnavailable(PoolError):
    """The database is unreachable (down at startup, or lost while serving); the pool
    reconnects in the background and requests fail fast until it is back."""
