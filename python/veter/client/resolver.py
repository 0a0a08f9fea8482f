"""Asynchronous DNS (c-ares through aiodns) with a timeout of its own.

aiohttp counts name resolution inside its connect phase; here it is bounded
separately, so a resolver that never answers is reported as a ``dns`` timeout after
``Timeouts.dns``, and the lookup never occupies a thread (the stdlib's getaddrinfo
would block one until the system resolver gives up).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["DNSTimeout", "TimedResolver", "dns_timeout_var"]

#: The DNS timeout of the request being made (set per request by the client).
dns_timeout_var: ContextVar[float | None] = ContextVar("veter_client_dns_timeout", default=None)

#: How long close() waits for c-ares to report cancelled lookups.
CLOSE_WAIT = 2.0


class DNSTimeout(Exception):
    """Raised inside aiohttp when resolution takes longer than its timeout (not an
    ``OSError``, so aiohttp passes it through unwrapped)."""

    def __init__(self, host: str, seconds: float) -> None:
        super().__init__(f"resolving {host!r} took longer than {seconds:g} s")
        self.host = host
        self.seconds = seconds


class TimedResolver(AbstractResolver):
    """aiohttp's aiodns resolver, each lookup bounded by the request's DNS timeout.

    ``nameservers`` (``"10.0.0.2"`` or ``"127.0.0.1:5353"``) replace the system's
    (``/etc/resolv.conf``); ``/etc/hosts`` is read either way.
    """

    def __init__(self, default_timeout: float, nameservers: Sequence[str] | None = None) -> None:
        options: dict[str, Any] = {}
        if nameservers:
            options["nameservers"] = list(nameservers)
        # c-ares gives up by itself a little after our timeout, so an abandoned lookup
        # does not linger; our timeout is the one that fires.
        options["timeout"] = default_timeout + 1.0
        options["tries"] = 1
        self._inner = aiohttp.AsyncResolver(**options)
        self._default = default_timeout
        # Lookups we stopped waiting for: c-ares still finishes them (from its own
        # thread, through the loop), so close() waits for them while the loop runs.
        self._abandoned: set[asyncio.Task[list[ResolveResult]]] = set()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        seconds = dns_timeout_var.get() or self._default
        lookup = asyncio.ensure_future(self._inner.resolve(host, port, family))
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(lookup)
        except TimeoutError:
            self._abandon(lookup)
            raise DNSTimeout(host, seconds) from None
        except asyncio.CancelledError:
            self._abandon(lookup)
            raise

    def _abandon(self, lookup: asyncio.Task[list[ResolveResult]]) -> None:
        if not lookup.done():
            self._abandoned.add(lookup)
            lookup.add_done_callback(self._forget)

    def _forget(self, lookup: asyncio.Task[list[ResolveResult]]) -> None:
        self._abandoned.discard(lookup)
        if not lookup.cancelled():
            lookup.exception()  # retrieved: an abandoned lookup's failure is no news

    async def close(self) -> None:
        """Cancel outstanding lookups and wait until c-ares has reported them."""
        await self._inner.close()
        if self._abandoned:
            await asyncio.wait(list(self._abandoned), timeout=CLOSE_WAIT)
