"""``HttpClient``: one aiohttp session per worker, with timeouts that hold.

Built on aiohttp's client (chosen over httpx by measurement, docs/toolkit.md). What
veter adds: every timeout finite and each one honoured (``total`` as a deadline
around the whole call, the body included, so a server that trickles one byte a
second cannot hold a request forever), a DNS timeout of its own, errors that name
the method, the URL and the timeout that fired, opt-in retries for idempotent
methods, the current request id sent on, and JSON helpers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
from multidict import CIMultiDict
from yarl import URL

from veter.client.errors import (
    ClientConnectionError,
    ClientError,
    ClientTimeout,
    HttpStatusError,
    ResponseTooLarge,
)
from veter.client.resolver import DNSTimeout, TimedResolver, dns_timeout_var
from veter.client.response import ClientResponse
from veter.client.settings import Retries, Timeouts
from veter.context import current_request_id
from veter.responses import Response

if TYPE_CHECKING:
    from veter.app import App

__all__ = ["HttpClient"]

log = logging.getLogger("veter.client")

Params = Mapping[str, str | int | float] | Sequence[tuple[str, str | int | float]]


class _Retry(Exception):
    """An attempt that may be tried again (internal)."""

    def __init__(self, outcome: ClientError | ClientResponse) -> None:
        super().__init__()
        self.outcome = outcome


class HttpClient:
    """An HTTP client for calling other services from handlers.

    Declared on the app, it opens one session (a keep-alive connection pool) in each
    worker at startup and closes it at shutdown; handlers reach it as
    ``request.app.state.<name>`` (``http`` by default)::

        http = HttpClient(app, base_url="http://users.internal:8000", timeouts=Timeouts(total=2))

        @app.get("/profile/{uid}")
        async def profile(request, uid):
            return await http.get_json(f"/users/{uid}")

    Unhandled client errors answer 504 (a timeout) or 502 (anything else) and are
    logged; pass ``gateway_errors=False`` to leave them as 500s.
    """

    def __init__(
        self,
        app: App | None = None,
        *,
        name: str = "http",
        base_url: str | None = None,
        timeouts: Timeouts | None = None,
        retries: Retries | None = None,
        limit: int = 100,
        limit_per_host: int = 20,
        keepalive_timeout: float = 15.0,
        dns_cache_seconds: float = 10.0,
        nameservers: Sequence[str] | None = None,
        max_body_bytes: int = 10 * 1024 * 1024,
        headers: Mapping[str, str] | None = None,
        request_id_header: str | None = "X-Request-ID",
        gateway_errors: bool = True,
    ) -> None:
        if not name.isidentifier():
            raise ValueError(f"client name must be an identifier (it is app.state.<name>), got {name!r}")
        if limit < 1 or limit_per_host < 1:
            raise ValueError("limit and limit_per_host must be at least 1 connection")
        if max_body_bytes < 0:
            raise ValueError(f"max_body_bytes must be >= 0, got {max_body_bytes}")
        if not keepalive_timeout > 0 or math.isinf(keepalive_timeout):
            raise ValueError(
                f"keepalive_timeout must be a positive, finite number, got {keepalive_timeout!r}"
            )
        if dns_cache_seconds < 0:
            raise ValueError(f"dns_cache_seconds must be >= 0, got {dns_cache_seconds}")
        self.name = name
        self.base_url = URL(base_url) if base_url else None
        self.timeouts = timeouts or Timeouts()
        self.retries = retries
        self.limit = limit
        self.limit_per_host = limit_per_host
        self.keepalive_timeout = keepalive_timeout
        self.dns_cache_seconds = dns_cache_seconds
        self.nameservers = list(nameservers) if nameservers else None
        self.max_body_bytes = max_body_bytes
        self.headers = dict(headers or {})
        self.request_id_header = request_id_header
        self.gateway_errors = gateway_errors
        self._session: aiohttp.ClientSession | None = None
        self._resolver: TimedResolver | None = None
        if app is not None:
            self.install(app)

    # -- lifecycle -------------------------------------------------------------------

    def install(self, app: App) -> None:
        """Open with the app's startup, close at shutdown, be ``app.state.<name>``."""
        if getattr(app.state, self.name, None) is not None:
            raise ValueError(f"app.state.{self.name} is already set: give this client another name")
        setattr(app.state, self.name, self)
        app.on_startup(self.open)
        app.on_shutdown(self.close)
        if self.gateway_errors:
            app.exception_handler(ClientError)(_gateway_response)

    async def open(self) -> None:
        if self._session is not None:
            return
        self._resolver = TimedResolver(self.timeouts.dns, self.nameservers)
        connector = aiohttp.TCPConnector(
            limit=self.limit,
            limit_per_host=self.limit_per_host,
            keepalive_timeout=self.keepalive_timeout,
            ttl_dns_cache=int(self.dns_cache_seconds) if self.dns_cache_seconds else None,
            use_dns_cache=self.dns_cache_seconds > 0,
            resolver=self._resolver,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self.headers,
            timeout=_aiohttp_timeout(self.timeouts),
            auto_decompress=True,
        )

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        resolver, self._resolver = self._resolver, None
        if resolver is not None:  # the connector does not close a resolver it was given
            await resolver.close()

    async def __aenter__(self) -> HttpClient:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- requests --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | str | None = None,
        timeouts: Timeouts | None = None,
        retries: Retries | bool | None = True,
    ) -> ClientResponse:
        """Send a request and read its whole response.

        ``timeouts`` replaces the client's for this call; ``retries=False`` turns
        retries off for it (``True``, the default, uses the client's policy). Raises
        ``ClientTimeout``, ``ClientConnectionError`` or ``ResponseTooLarge``; any
        status is returned (see ``raise_for_status``).
        """
        session = self._session
        method = method.upper()
        target = self._url(url)
        shown = str(target.with_query(None)) if params is None else str(target)
        if session is None:
            raise ClientError(method, shown, f"client {self.name!r} is not open (install it on the app)")
        limits = timeouts or self.timeouts
        policy = self.retries if retries is True else (retries or None)
        if policy is not None and method not in policy.methods:
            policy = None
        sent_headers = self._headers(headers)
        body: bytes | str | None = content
        if json is not None:
            body = orjson.dumps(json)
            sent_headers.setdefault("Content-Type", "application/json")
        token = dns_timeout_var.set(limits.dns)
        try:
            async with asyncio.timeout(limits.total):
                return await self._attempts(
                    session, method, target, shown, params, sent_headers, body, limits, policy
                )
        except TimeoutError as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise ClientTimeout(method, shown, "total", limits.total) from None
        finally:
            dns_timeout_var.reset(token)

    async def _attempts(
        self,
        session: aiohttp.ClientSession,
        method: str,
        url: URL,
        shown: str,
        params: Params | None,
        headers: CIMultiDict[str],
        body: bytes | str | None,
        limits: Timeouts,
        policy: Retries | None,
    ) -> ClientResponse:
        attempts = policy.attempts if policy else 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._once(session, method, url, shown, params, headers, body, limits, policy)
            except _Retry as retry:
                if attempt == attempts or policy is None:
                    if isinstance(retry.outcome, ClientResponse):
                        return retry.outcome
                    raise retry.outcome from retry.__cause__
                delay = min(policy.max_backoff, policy.backoff * 2.0 ** (attempt - 1))
                log.debug("%s %s: attempt %d failed, retrying in %.3f s", method, shown, attempt, delay)
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    async def _once(
        self,
        session: aiohttp.ClientSession,
        method: str,
        url: URL,
        shown: str,
        params: Params | None,
        headers: CIMultiDict[str],
        body: bytes | str | None,
        limits: Timeouts,
        policy: Retries | None,
    ) -> ClientResponse:
        try:
            async with session.request(
                method,
                url,
                params=params,
                headers=headers,
                data=body,
                timeout=_aiohttp_timeout(limits),
                allow_redirects=False,
            ) as raw:
                content = await self._read_body(raw, method, shown)
                response = ClientResponse(method, str(raw.url), raw.status, raw.headers, content, raw.charset)
        except DNSTimeout as exc:
            raise _Retry(ClientTimeout(method, shown, "dns", exc.seconds)) from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise _Retry(ClientTimeout(method, shown, "connect", limits.connect)) from exc
        except aiohttp.SocketTimeoutError as exc:
            raise _Retry(ClientTimeout(method, shown, "read", limits.read)) from exc
        except aiohttp.ClientConnectorDNSError as exc:
            raise _Retry(ClientConnectionError(method, shown, f"DNS lookup failed: {exc.os_error}")) from exc
        except aiohttp.ClientConnectorError as exc:
            raise _Retry(ClientConnectionError(method, shown, f"cannot connect: {exc.os_error}")) from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise _Retry(ClientConnectionError(method, shown, _describe(exc))) from exc
        except aiohttp.ClientResponseError as exc:  # a malformed response
            raise ClientError(method, shown, f"bad response: {exc.message}") from exc
        if policy is not None and response.status in policy.statuses:
            raise _Retry(response)
        return response

    async def _read_body(self, raw: aiohttp.ClientResponse, method: str, shown: str) -> bytes:
        limit = self.max_body_bytes
        if raw.content_length is not None and raw.content_length > limit:
            raise ResponseTooLarge(method, shown, f"body of {raw.content_length} bytes is over {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in raw.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(method, shown, f"body is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _url(self, url: str) -> URL:
        target = URL(url)
        if target.is_absolute():
            return target
        if self.base_url is None:
            raise ValueError(f"relative URL {url!r} needs the client's base_url")
        return self.base_url.join(target)

    def _headers(self, given: Mapping[str, str] | None) -> CIMultiDict[str]:
        headers: CIMultiDict[str] = CIMultiDict(given or {})
        if self.request_id_header and self.request_id_header not in headers:
            request_id = current_request_id()
            if request_id is not None:
                headers[self.request_id_header] = request_id
        return headers

    # -- shorthands ------------------------------------------------------------------

    async def get(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("GET", url, **kw)

    async def head(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("HEAD", url, **kw)

    async def post(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("POST", url, **kw)

    async def put(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("PUT", url, **kw)

    async def patch(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("PATCH", url, **kw)

    async def delete(self, url: str, **kw: Any) -> ClientResponse:
        return await self.request("DELETE", url, **kw)

    async def get_json(self, url: str, **kw: Any) -> Any:
        """GET and decode the JSON answer; a non-2xx status raises ``HttpStatusError``."""
        return (await self.request("GET", url, **kw)).raise_for_status().json()

    async def post_json(self, url: str, json: Any, **kw: Any) -> Any:
        """POST ``json`` and decode the JSON answer (``None`` for an empty body);
        a non-2xx status raises ``HttpStatusError``."""
        response = (await self.request("POST", url, json=json, **kw)).raise_for_status()
        return response.json() if response.content else None

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        return f"<HttpClient {self.name!r} {state}>"


def _aiohttp_timeout(limits: Timeouts) -> aiohttp.ClientTimeout:
    # total is veter's own deadline around the whole call; DNS is the resolver's.
    # ceil_threshold=inf: aiohttp would otherwise round timeouts of 5 s and more up to
    # the next whole second of the loop clock.
    return aiohttp.ClientTimeout(
        total=None,
        connect=None,
        sock_connect=limits.connect,
        sock_read=limits.read,
        ceil_threshold=math.inf,
    )


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _gateway_response(request: Any, exc: ClientError) -> Response:
    """An unhandled client error in a handler: 504 for a timeout, 502 otherwise."""
    status = 504 if isinstance(exc, ClientTimeout) else 502
    log.warning(
        "%s %s: upstream call failed: %s", getattr(request, "method", "?"), getattr(request, "path", "?"), exc
    )
    if isinstance(exc, HttpStatusError):
        status = 502
    return Response("Gateway Timeout" if status == 504 else "Bad Gateway", status=status)
