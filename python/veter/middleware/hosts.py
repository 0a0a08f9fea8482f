"""Trusted hosts: requests for a host the service does not serve get 400.

``app.middleware(trusted_hosts(["api.example.com", "*.example.com"]))``. It keeps a
forged ``Host`` from reaching code that builds absolute URLs from it (password-reset
links, redirects, cache keys): the host checked is ``request.host``, the one a
trusted proxy named (``X-Forwarded-Host``/``Forwarded``) or else the ``Host``
header, compared without its port and case-insensitively. A request that names no
host (HTTP/1.0 without ``Host``) is refused too, unless ``allow_missing=True``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veter._core import Response
from veter.responses import AnyResponse
from veter.routing import CallNext, Middleware
from veter.syntax import HOST_NAME

__all__ = ["trusted_hosts"]

_NAME = re.compile(rf"(?:\*\.)?{HOST_NAME}\.?")
_IPV6 = re.compile(r"\[[0-9a-f:.]+\]")


def trusted_hosts(allowed_hosts: Sequence[str], *, allow_missing: bool = False) -> Middleware:
    """A middleware that answers 400 to requests for hosts not in ``allowed_hosts``.

    Entries: exact names (``"api.example.com"``), a leading wildcard label for every
    subdomain (``"*.example.com"``: ``a.example.com``, ``a.b.example.com``, not
    ``example.com`` itself), IP literals (``"127.0.0.1"``, ``"[::1]"``), or ``"*"``.
    """
    if isinstance(allowed_hosts, str):
        raise TypeError("trusted_hosts(): allowed_hosts is a list of host names")
    if not allowed_hosts:
        raise ValueError("trusted_hosts(): allowed_hosts is empty: no request could be served")
    exact: set[str] = set()
    suffixes: list[str] = []
    any_host = False
    for entry in allowed_hosts:
        host = entry.strip().lower()
        if host == "*":
            any_host = True
        elif not (_NAME.fullmatch(host) or _IPV6.fullmatch(host)):
            raise ValueError(
                f"trusted_hosts(): {entry!r} is not a host name (no scheme, port or path; "
                "a wildcard only as the first label: '*.example.com')"
            )
        elif host.startswith("*."):
            suffixes.append(host[1:])
        else:
            exact.add(host.rstrip("."))
    ends = tuple(suffixes)

    def allowed(host: str | None) -> bool:
        if host is None:
            return allow_missing
        if any_host:
            return True
        name = _without_port(host.lower()).rstrip(".")
        return name in exact or name.endswith(ends)

    async def trusted_hosts_middleware(request: Any, call_next: CallNext) -> AnyResponse:
        if allowed(request.host):
            return await call_next(request)
        return Response("Invalid host", status=400)

    return trusted_hosts_middleware


def _without_port(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rpartition(":")[0] if ":" in host else host
