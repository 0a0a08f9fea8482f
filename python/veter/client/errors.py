"""Errors of veter's HTTP client. Each names the method, the URL and what went wrong;
a timeout also says which one fired (``dns``, ``connect``, ``read`` or ``total``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from veter.client.response import ClientResponse

__all__ = ["ClientConnectionError", "ClientError", "ClientTimeout", "HttpStatusError", "ResponseTooLarge"]


class ClientError(Exception):
    """A request failed. ``method`` and ``url`` say which."""

    def __init__(self, method: str, url: str, reason: str) -> None:
        super().__init__(f"{method} {url}: {reason}")
        self.method = method
        self.url = url
        self.reason = reason


class ClientTimeout(ClientError, TimeoutError):
    """A timeout fired: ``which`` is ``"dns"``, ``"connect"``, ``"read"`` or ``"total"``,
    ``seconds`` its setting."""

    def __init__(self, method: str, url: str, which: str, seconds: float) -> None:
        super().__init__(method, url, f"{which} timeout ({seconds:g} s) fired")
        self.which = which
        self.seconds = seconds


class ClientConnectionError(ClientError):
    """The request could not be sent or its response not received: DNS failure,
    connection refused or reset, the server closing the connection."""


class ResponseTooLarge(ClientError):
    """The response body is larger than ``max_body_bytes``."""


class HttpStatusError(ClientError):
    """The response's status is not 2xx (raised by ``raise_for_status`` and the JSON
    helpers); ``response`` is the response."""

    def __init__(self, response: ClientResponse) -> None:
        super().__init__(response.method, response.url, f"status {response.status}")
        self.response = response
        self.status = response.status
