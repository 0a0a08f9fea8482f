"""Route declarations and how a handler is adapted before the Rust core calls it.

Everything here runs once, when the app is frozen (STYLE 3): the core then calls
``Route.target`` directly for every request, with no per-request dispatch in Python.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from veter.concurrency import run_in_thread
from veter.responses import AnyResponse, Response, to_response

__all__ = ["Handler", "Middleware", "Route", "compose", "is_async_callable"]

Handler = Callable[..., Any]
CallNext = Callable[[Any], Awaitable[AnyResponse]]
Middleware = Callable[[Any, CallNext], Awaitable[AnyResponse]]
#: The app's answer to a handler's exception: a Response, or an awaitable of one.
ErrorResponder = Callable[[Any, BaseException], Response | Awaitable[Response]]

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})


def is_async_callable(fn: object) -> bool:
    """True for ``async def`` functions and objects whose ``__call__`` is one."""
    while hasattr(fn, "func") and hasattr(fn, "args"):  # functools.partial
        fn = fn.func
    # The __call__ method itself is inspected (an instance with async __call__), not callability.
    call = getattr(fn, "__call__", None)  # noqa: B004
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class Route:
    path: str
    methods: tuple[str, ...]
    handler: Handler
    blocking: bool = False
    name: str | None = None
    #: The handler starts when the head arrives and reads the body with request.stream().
    stream_body: bool = False
    #: A WebSocket route: ``handler`` takes a ``veter.websockets.WebSocket``.
    websocket: bool = False
    #: Grouping for the API document (a router's, then the route's own).
    tags: tuple[str, ...] = ()
    #: Middleware of the routers it was declared in, inside the app's (outermost first).
    middleware: tuple[Middleware, ...] = ()
    #: A WebSocket route's ``veter.websockets.WebSocketSettings``.
    websocket_settings: Any = None
    #: In the OpenAPI document (False for probes and the document itself).
    include_in_schema: bool = True
    #: Other answers the route gives, for the document: status -> description.
    responses: Mapping[int, str] = field(default_factory=dict)

    @property
    def is_async(self) -> bool:
        return self.blocking or is_async_callable(self.handler)

    def describe(self) -> str:
        handler = getattr(self.handler, "__qualname__", repr(self.handler))
        module = getattr(self.handler, "__module__", "?")
        return f"{','.join(self.methods):<20} {self.path:<40} {module}.{handler}"


@dataclass(frozen=True)
class Endpoint:
    """A route as the core takes it (``_core.Dispatcher`` reads these attributes):
    its methods and path, and the handler to call with the app's middleware around
    it, which may differ from the route's own handler."""

    methods: tuple[str, ...]
    path: str
    target: Handler
    is_async: bool
    stream_body: bool
    websocket: bool


#: A parameter of a path template: its name (group 1) and converter (group 2, if given).
PATH_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::(str|int|path))?\}")


def path_for(template: str, params: Mapping[str, object]) -> str:
    """The path ``template`` (``/users/{uid:int}/files/{rest:path}``) with ``params``
    put in: ``str`` values percent-encoded as one segment, ``path`` values with their
    slashes kept, ``int`` values as digits. A missing, extra or mistyped parameter
    is an error naming it."""
    used: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name, kind = match.group(1), match.group(2) or "str"
        if name not in params:
            raise ValueError(f"{template}: no value for the parameter {name!r}")
        used.add(name)
        value = params[name]
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{template}: {name!r} is an int parameter, got {value!r}")
            return str(value)
        text = str(value)
        if not text:
            raise ValueError(f"{template}: {name!r} may not be empty")
        return quote(text, safe="/" if kind == "path" else "")

    path = PATH_PARAM.sub(fill, template)
    extra = sorted(set(params) - used)
    if extra:
        raise ValueError(f"{template}: no parameter named {', '.join(repr(e) for e in extra)}")
    return path


def normalise_methods(methods: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(methods, str):
        methods = [methods]
    out: list[str] = []
    for method in methods:
        upper = method.upper()
        if not upper or not upper.isascii() or not upper.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"invalid HTTP method {method!r}")
        if upper not in out:
            out.append(upper)
    if not out:
        raise ValueError("a route needs at least one method")
    return tuple(out)


def _blocking(fn: Handler) -> Handler:
    """Run a sync handler in the bounded thread pool instead of on the loop."""

    async def run_blocking(request: Any, **params: Any) -> Any:
        return await run_in_thread(fn, request, **params)

    run_blocking.__qualname__ = getattr(fn, "__qualname__", "handler")
    return run_blocking


def target_for(route: Route) -> tuple[Handler, bool]:
    """What the core calls for ``route`` when there is no middleware, and whether
    its result must be awaited."""
    if route.blocking:
        if is_async_callable(route.handler):
            raise TypeError(f"{route.path}: blocking=True is for plain def handlers, not async def")
        return _blocking(route.handler), True
    return route.handler, route.is_async


def compose(
    route: Route, middleware: Sequence[Middleware], on_error: ErrorResponder, *, wrap: bool = False
) -> tuple[Handler, bool]:
    """The route's handler wrapped in the middleware chain, built once.

    Inside the chain every result is a ``Response`` and every handler exception has
    already become one (through the app's exception handlers), so a middleware can
    rely on ``await call_next(request)`` returning a ``Response``. Without
    middleware the handler is called by the core as it is, unless ``wrap`` (the
    app's exception handlers must be awaited, which the core does not do).
    """
    handler, is_async = target_for(route)
    if not middleware and not wrap:
        return handler, is_async

    async def endpoint(request: Any) -> AnyResponse:
        try:
            result = handler(request, **request.path_params)
            if is_async:
                result = await result
            return to_response(result)
        except Exception as exc:  # noqa: BLE001 - becomes the error response
            return await _answer_error(on_error, request, exc)

    chain: CallNext = endpoint
    for mw in reversed(middleware):
        chain = _link(mw, chain)

    async def entry(request: Any, **_params: Any) -> AnyResponse:
        return await chain(request)

    return entry, True


def not_found(request: Any) -> Response:
    """The answer to a path no route has (the core's own when nothing is customised)."""
    return Response("Not Found", status=404)


def method_not_allowed(request: Any, allow: str) -> Response:
    """The answer to a method no route of the path takes; ``allow`` lists those that are."""
    return Response("Method Not Allowed", status=405, headers={"Allow": allow})


def compose_unmatched(
    on_not_found: Handler,
    on_not_allowed: Handler,
    middleware: Sequence[Middleware],
    on_error: ErrorResponder,
) -> Handler:
    """The handler the core calls for requests it does not hand to a route:
    ``(request)`` for an unknown path, ``(request, allow=...)`` for a method no route
    takes, ``(request, answer=...)`` for a request the core answers itself (the 503
    of a shed request). The app's middleware runs around each, as around a route's
    handler, so it can add to or replace the core's answers."""

    async def respond(request: Any, allow: str | None) -> AnyResponse:
        try:
            result = on_not_found(request) if allow is None else on_not_allowed(request, allow)
            if inspect.isawaitable(result):
                result = await result
            return to_response(result)
        except Exception as exc:  # noqa: BLE001 - becomes the error response
            return await _answer_error(on_error, request, exc)

    async def entry(request: Any, allow: str | None = None, answer: Response | None = None) -> AnyResponse:
        async def endpoint(request: Any) -> AnyResponse:
            if answer is not None:
                return answer
            return await respond(request, allow)

        chain: CallNext = endpoint
        for mw in reversed(middleware):
            chain = _link(mw, chain)
        return await chain(request)

    return entry


async def _answer_error(on_error: ErrorResponder, request: Any, exc: BaseException) -> Response:
    answer = on_error(request, exc)
    if inspect.isawaitable(answer):
        return await answer
    return answer


def _link(mw: Middleware, call_next: CallNext) -> CallNext:
    async def call(request: Any) -> AnyResponse:
        return await mw(request, call_next)

    return call
