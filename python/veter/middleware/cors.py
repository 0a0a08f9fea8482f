"""Cross-Origin Resource Sharing, by the Fetch standard's rules.

``app.middleware(cors(allow_origins=["https://app.example"]))``. A preflight
(``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is answered here,
before any route: 204 with the ``Access-Control-Allow-*`` headers when the origin,
the method and every requested header are allowed, else 400 naming what was not.
Other requests from an allowed origin get ``Access-Control-Allow-Origin`` (and
``-Credentials``, ``-Expose-Headers``) on whatever the app answers; a request from
another origin is served without them, so the browser keeps the answer from the
page. Every answer whose CORS headers depend on the origin says ``Vary: Origin``,
so a cache never gives one origin's answer to another.

Decided at setup: the configuration is checked and its header values made once.
A wildcard ``*`` origin with credentials is refused (it would let every site make
requests with the user's cookies); Fetch does not read ``*`` as a wildcard in the
method, header and expose lists of a credentialed answer, so those lists are echoed
from the request (methods, headers) or must be named (expose).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veter._core import Response
from veter.responses import AnyResponse
from veter.routing import CallNext, Middleware
from veter.syntax import TOKEN

__all__ = ["cors"]

#: Request headers a browser may send cross-origin without asking (Fetch's
#: CORS-safelisted request headers): always allowed in a preflight.
SAFELISTED = frozenset({"accept", "accept-language", "content-language", "content-type"})
#: Methods a browser sends without a preflight; always allowed.
SIMPLE_METHODS = frozenset({"GET", "HEAD", "POST"})


def cors(
    *,
    allow_origins: Sequence[str] = (),
    allow_origin_regex: str | None = None,
    allow_methods: Sequence[str] = ("GET", "HEAD", "POST"),
    allow_headers: Sequence[str] = (),
    allow_credentials: bool = False,
    expose_headers: Sequence[str] = (),
    max_age: int = 600,
) -> Middleware:
    """A CORS middleware.

    ``allow_origins``: exact origins (``"https://app.example"``, scheme and host and
    any port, no path), or ``["*"]`` for any; ``allow_origin_regex``: origins
    matching it whole (e.g. ``r"https://.*\\.example\\.com"``). ``allow_methods`` and
    ``allow_headers``: what a preflight may ask for (``["*"]``: anything).
    ``allow_credentials``: the browser may send cookies and read the answer.
    ``expose_headers``: response headers a page may read beyond the safelisted ones.
    ``max_age``: seconds a browser may cache a preflight's answer.
    """
    policy = _Policy(
        allow_origins,
        allow_origin_regex,
        allow_methods,
        allow_headers,
        allow_credentials,
        expose_headers,
        max_age,
    )

    async def cors_middleware(request: Any, call_next: CallNext) -> AnyResponse:
        headers = request.headers
        origin = headers.get("origin")
        if origin is None:
            return await call_next(request)
        if request.method == "OPTIONS" and "access-control-request-method" in headers:
            return policy.preflight(origin, headers)
        response = await call_next(request)
        policy.decorate(origin, response)
        return response

    return cors_middleware


class _Policy:
    """The checked configuration and the header values made from it."""

    def __init__(
        self,
        origins: Sequence[str],
        origin_regex: str | None,
        methods: Sequence[str],
        headers: Sequence[str],
        credentials: bool,
        expose: Sequence[str],
        max_age: int,
    ) -> None:
        if isinstance(origins, str) or isinstance(methods, str) or isinstance(headers, str):
            raise TypeError("cors(): allow_origins, allow_methods and allow_headers are lists of strings")
        self.any_origin = "*" in origins
        if self.any_origin and credentials:
            raise ValueError(
                "cors(): allow_origins=['*'] with allow_credentials=True would let every site make "
                "requests with the user's cookies and read the answers; list the origins, or use "
                "allow_origin_regex"
            )
        self.origins = frozenset(_checked_origin(o) for o in origins if o != "*")
        self.origin_regex = re.compile(origin_regex) if origin_regex is not None else None
        self.any_method = "*" in methods
        self.methods = [_checked_token(m, "method") for m in methods if m != "*"]
        self.any_header = "*" in headers
        self.headers = frozenset(_checked_token(h, "header").lower() for h in headers if h != "*")
        if "*" in expose and credentials:
            raise ValueError(
                "cors(): expose_headers=['*'] is not a wildcard for requests with credentials "
                "(Fetch): name the headers"
            )
        self.credentials = credentials
        self.expose = ", ".join(_checked_token(h, "header") if h != "*" else h for h in expose)
        if isinstance(max_age, bool) or not isinstance(max_age, int) or max_age < 0:
            raise ValueError(f"cors(): max_age must be an int of seconds >= 0, got {max_age!r}")
        self.max_age = str(max_age)
        allowed = SIMPLE_METHODS | set(self.methods)
        self.methods_value = ", ".join(sorted(allowed))
        self.allowed_methods = frozenset(allowed)

    def allows(self, origin: str) -> bool:
        if self.any_origin or origin in self.origins:
            return True
        return self.origin_regex is not None and self.origin_regex.fullmatch(origin) is not None

    def preflight(self, origin: str, headers: Any) -> Response:
        method = headers.get("access-control-request-method", "").strip()
        requested = [h.strip().lower() for h in headers.get("access-control-request-headers", "").split(",")]
        requested = [h for h in requested if h]
        problems = []
        if not self.allows(origin):
            problems.append(f"origin {origin!r}")
        if not (self.any_method or method in self.allowed_methods):
            problems.append(f"method {method!r}")
        refused = [h for h in requested if not (self.any_header or h in self.headers or h in SAFELISTED)]
        if refused:
            problems.append("headers " + ", ".join(repr(h) for h in refused))
        if problems:
            refusal = Response(f"CORS preflight refused: {'; '.join(problems)} not allowed", status=400)
            self._vary(refusal)
            return refusal
        response = Response(b"", status=204)
        self._allow_origin(origin, response)
        # Echoed when "*" was configured: Fetch reads "*" literally for credentialed
        # requests, and the echo is what was asked for anyway.
        response.set_header("Access-Control-Allow-Methods", method if self.any_method else self.methods_value)
        if requested:
            response.set_header("Access-Control-Allow-Headers", ", ".join(requested))
        response.set_header("Access-Control-Max-Age", self.max_age)
        return response

    def decorate(self, origin: str, response: AnyResponse) -> None:
        if not self.allows(origin):
            self._vary(response)
            return
        self._allow_origin(origin, response)
        if self.expose:
            response.set_header("Access-Control-Expose-Headers", self.expose)

    def _allow_origin(self, origin: str, response: AnyResponse) -> None:
        # "*" only for any origin (never with credentials, refused at setup);
        # otherwise the request's origin, and the answer varies by it.
        if self.any_origin:
            response.set_header("Access-Control-Allow-Origin", "*")
            return
        response.set_header("Access-Control-Allow-Origin", origin)
        if self.credentials:
            response.set_header("Access-Control-Allow-Credentials", "true")
        self._vary(response)

    def _vary(self, response: AnyResponse) -> None:
        if self.any_origin:
            return  # the answer is the same for every origin
        vary = response.get_header("vary")
        if vary is None:
            response.set_header("Vary", "Origin")
        elif "origin" not in {v.strip().lower() for v in vary.split(",")} and vary.strip() != "*":
            response.set_header("Vary", f"{vary}, Origin")


def _checked_origin(origin: str) -> str:
    if not re.fullmatch(r"(?:[a-z][a-z0-9+.\-]*://[^/\s?#]+|null)", origin):
        raise ValueError(
            f"cors(): {origin!r} is not an origin: scheme://host[:port], no path or trailing slash "
            "(e.g. 'https://app.example.com')"
        )
    return origin


def _checked_token(value: str, what: str) -> str:
    if not TOKEN.fullmatch(value):
        raise ValueError(f"cors(): {value!r} is not a valid {what} name")
    return value
