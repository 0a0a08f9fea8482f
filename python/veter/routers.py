"""Declaring routes: the decorators ``App`` and ``Router`` share, and ``Router``.

A ``Router`` groups routes under a path prefix, with tags (for the API document)
and middleware of its own (run inside the app's, around its routes only). It is
copied into an app or another router by ``include``, so routers nest; routes
added to a router after it was included are not in what included it. Conflicts
between routes (the same method on the same path) are reported when the app
starts serving, wherever they were declared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar

from veter.routing import Handler, Middleware, Route, is_async_callable, normalise_methods
from veter.websockets import WebSocketSettings

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RouteTable", "Router"]

H = TypeVar("H", bound=Handler)


class RouteOptions(TypedDict, total=False):
    """The keywords of the method shortcuts (``get``, ``post``...), as ``route``'s."""

    blocking: bool
    name: str | None
    stream_body: bool
    tags: Sequence[str]
    responses: Mapping[int, str] | None
    include_in_schema: bool


class RouteTable:
    """The route decorators; a subclass keeps what ``_add`` is given."""

    def _add(self, route: Route) -> None:
        raise NotImplementedError

    def add_route(
        self,
        path: str,
        handler: Handler,
        methods: Sequence[str] | str = ("GET",),
        *,
        blocking: bool = False,
        name: str | None = None,
        stream_body: bool = False,
        tags: Sequence[str] = (),
        responses: Mapping[int, str] | None = None,
        include_in_schema: bool = True,
    ) -> None:
        """Register ``handler`` for ``methods`` on ``path``.

        ``path`` may hold ``{name}``, ``{name:int}`` and ``{name:path}`` parameters,
        passed to the handler as keyword arguments. ``blocking=True`` runs a plain
        ``def`` handler in the bounded thread pool instead of on the event loop.
        ``stream_body=True`` starts an ``async def`` handler as soon as the request
        head arrives; it reads the body with ``async for chunk in request.stream()``
        as the body arrives (see docs/guide.md, "Requests"). ``tags``,
        ``responses`` (other statuses it answers: ``{404: "No such item"}``) and
        ``include_in_schema`` are for the OpenAPI document.
        """
        if not callable(handler):
            raise TypeError(f"handler for {path!r} is not callable: {handler!r}")
        _check_path(path)
        if blocking and is_async_callable(handler):
            raise TypeError(f"{path}: blocking=True is for plain def handlers, not async def")
        if stream_body and not is_async_callable(handler):
            raise TypeError(f"{path}: stream_body=True needs an async def handler (it awaits the body)")
        methods = normalise_methods(methods)
        self._add(
            Route(
                path,
                methods,
                handler,
                blocking,
                name,
                stream_body,
                tags=_tags(tags),
                responses=_responses(responses),
                include_in_schema=include_in_schema,
            )
        )

    def route(
        self,
        path: str,
        methods: Sequence[str] | str = ("GET",),
        *,
        blocking: bool = False,
        name: str | None = None,
        stream_body: bool = False,
        tags: Sequence[str] = (),
        responses: Mapping[int, str] | None = None,
        include_in_schema: bool = True,
    ) -> Callable[[H], H]:
        def register(handler: H) -> H:
            self.add_route(
                path,
                handler,
                methods,
                blocking=blocking,
                name=name,
                stream_body=stream_body,
                tags=tags,
                responses=responses,
                include_in_schema=include_in_schema,
            )
            return handler

        return register

    def get(self, path: str, **options: Unpack[RouteOptions]) -> Callable[[H], H]:
        return self.route(path, ("GET",), **options)

    def post(self, path: str, **options: Unpack[RouteOptions]) -> Callable[[H], H]:
        return self.route(path, ("POST",), **options)

    def put(self, path: str, **options: Unpack[RouteOptions]) -> Callable[[H], H]:
        return self.route(path, ("PUT",), **options)

    def patch(self, path: str, **options: Unpack[RouteOptions]) -> Callable[[H], H]:
        return self.route(path, ("PATCH",), **options)

    def delete(self, path: str, **options: Unpack[RouteOptions]) -> Callable[[H], H]:
        return self.route(path, ("DELETE",), **options)

    def websocket(
        self,
        path: str,
        *,
        name: str | None = None,
        max_message_size: int | None = None,
        max_queue: int | None = None,
        ping_interval: float | None = None,
        ping_timeout: float | None = None,
        close_timeout: float | None = None,
        deflate: bool | None = None,
        deflate_window_bits: int | None = None,
        deflate_level: int | None = None,
        deflate_min_size: int | None = None,
    ) -> Callable[[H], H]:
        """Register ``async def handler(ws, **params)`` for WebSocket connections on
        ``path`` (see docs/websockets.md). The limits and the permessage-deflate
        settings default to the server's ``ws_*`` settings."""
        settings = WebSocketSettings(
            max_message_size,
            max_queue,
            ping_interval,
            ping_timeout,
            close_timeout,
            deflate,
            deflate_window_bits,
            deflate_level,
            deflate_min_size,
        )
        try:
            settings.check()
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

        def register(handler: H) -> H:
            if not is_async_callable(handler):
                raise TypeError(f"{path}: a WebSocket handler must be an async def function (ws, **params)")
            _check_path(path)
            self._add(Route(path, ("GET",), handler, False, name, False, True, websocket_settings=settings))
            return handler

        return register


class Router(RouteTable):
    """Routes under a common ``prefix`` (``"/users"``; no trailing slash), with
    ``tags`` and ``middleware`` that apply to each of them; ``app.include(router)``.

    A route's path is the prefix and its own path joined as they are:
    ``Router(prefix="/items")`` with ``@router.get("/")`` serves ``/items/`` and
    with ``@router.get("/{id:int}")`` serves ``/items/{id:int}``.
    """

    def __init__(
        self, prefix: str = "", *, tags: Sequence[str] = (), middleware: Sequence[Middleware] = ()
    ) -> None:
        self.prefix = _checked_prefix(prefix)
        self.tags = _tags(tags)
        self.middleware = _checked_middleware(middleware)
        self._routes: list[Route] = []

    def _add(self, route: Route) -> None:
        self._routes.append(route)

    def include(self, router: Router, *, prefix: str = "") -> None:
        """Copy ``router``'s routes into this one, under ``prefix`` (and this
        router's own prefix, tags and middleware when it is included in turn)."""
        for route in included(router, prefix):
            self._add(route)

    @property
    def routes(self) -> list[Route]:
        """The routes as an app would serve them: prefix joined, tags and middleware
        merged (this router's outside its routes' own)."""
        return [_under(route, self.prefix, self.tags, self.middleware) for route in self._routes]


def included(router: Router, prefix: str) -> list[Route]:
    """``router``'s routes under a further ``prefix``."""
    if not isinstance(router, Router):
        raise TypeError(f"include() takes a veter.Router, not {type(router).__name__}")
    prefix = _checked_prefix(prefix)
    return [_under(route, prefix, (), ()) for route in router.routes]


def _under(route: Route, prefix: str, tags: tuple[str, ...], middleware: tuple[Middleware, ...]) -> Route:
    return dataclasses.replace(
        route,
        path=prefix + route.path,
        tags=tags + tuple(t for t in route.tags if t not in tags),
        middleware=middleware + route.middleware,
    )


def _check_path(path: str) -> None:
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"route path must start with '/': {path!r}")


def _checked_prefix(prefix: str) -> str:
    if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
        raise ValueError(f"a router prefix starts with '/' and does not end with one: {prefix!r}")
    return prefix


def _tags(tags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise TypeError(f"tags is a list of strings, not the string {tags!r}")
    return tuple(dict.fromkeys(tags))


def _responses(responses: Mapping[int, str] | None) -> dict[int, str]:
    out: dict[int, str] = {}
    for status, description in (responses or {}).items():
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise ValueError(f"responses: {status!r} is not an HTTP status")
        out[status] = str(description)
    return out


def _checked_middleware(middleware: Sequence[Middleware]) -> tuple[Middleware, ...]:
    for fn in middleware:
        if not is_async_callable(fn):
            raise TypeError(f"router middleware must be async def functions (request, call_next), not {fn!r}")
    return tuple(middleware)
