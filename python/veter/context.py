"""Context variables describing the request being handled.

While a handler runs, ``current_request()`` is its request, so anything running
on behalf of that request sees it: log records (their ``request_id``), veter's
HTTP client (it sends the id on). A handler that runs as a task (``async def``,
``blocking=True``) has the request in ``request_var``, and tasks it spawns inherit
it (asyncio copies the context into every new task). A plain ``def`` handler runs
inline, with the request in a per-thread slot the core fills for the length of
the call (setting a context variable per request costs more than the rest of the
request; see src/protocol/current.rs): code it calls sees the request, a task it
creates does not.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from veter._core import inline_request

if TYPE_CHECKING:
    from veter._core import Request

__all__ = ["current_request", "current_request_id", "request_var"]

#: The request of the handler running as a task (and of the tasks it started), or None.
request_var: ContextVar[Request | None] = ContextVar("veter_request", default=None)


def current_request() -> Request | None:
    """The request this code runs for, or None outside a request."""
    request = request_var.get()
    return request if request is not None else inline_request()


def current_request_id() -> str | None:
    """The id of the request this code runs for, or None outside a request (or when
    request ids are off)."""
    request = current_request()
    return None if request is None else request.id
