"""Context variables describing the request being handled.

Set by the server while a request runs (see the request-id feature), read by
anything that runs inside the request: logging, veter's HTTP client.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["current_request_id", "request_id_var"]

#: The id of the request being handled, or None outside a request.
request_id_var: ContextVar[str | None] = ContextVar("veter_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request this code runs for, or None outside a request."""
    return request_id_var.get()
