"""Context variables describing the request being handled.

The server sets ``request_var`` to the request while its handler runs, so
anything running on behalf of that request sees it: log records (their
``request_id``), veter's HTTP client (it sends the id on), and tasks the handler
spawns (asyncio copies the context into every new task).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from veter._core import Request

__all__ = ["current_request", "current_request_id", "request_var"]

#: The request being handled, or None outside a request.
request_var: ContextVar[Request | None] = ContextVar("veter_request", default=None)


def current_request() -> Request | None:
    """The request this code runs for, or None outside a request."""
    return request_var.get()


def current_request_id() -> str | None:
    """The id of the request this code runs for, or None outside a request (or when
    request ids are off)."""
    request = request_var.get()
    return None if request is None else request.id
