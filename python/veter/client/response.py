"""A response as the client received it, body read in full."""

from __future__ import annotations

from typing import Any

import orjson
from multidict import CIMultiDictProxy

__all__ = ["ClientResponse"]


class ClientResponse:
    """``status``, ``headers`` (case-insensitive), ``content`` (bytes), and the
    ``method`` and ``url`` of the request."""

    __slots__ = ("charset", "content", "headers", "method", "status", "url")

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        headers: CIMultiDictProxy[str],
        content: bytes,
        charset: str | None,
    ) -> None:
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.content = content
        self.charset = charset

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.content.decode(self.charset or "utf-8", errors="replace")

    def json(self) -> Any:
        return orjson.loads(self.content)

    def raise_for_status(self) -> ClientResponse:
        """Raise ``HttpStatusError`` unless the status is 2xx; return the response."""
        if not self.ok:
            from veter.client.errors import HttpStatusError

            raise HttpStatusError(self)
        return self

    def __repr__(self) -> str:
        return f"<ClientResponse {self.method} {self.url} {self.status} {len(self.content)} bytes>"
