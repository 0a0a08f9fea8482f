"""The application object: routes, middleware, lifespan hooks, error handling."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import orjson

from veter import _core
from veter.config import ServerConfig
from veter.datastructures import State
from veter.exceptions import HTTPException, RequestValidationError
from veter.openapi import OpenAPI, document
from veter.responses import Response
from veter.responses import json as json_response
from veter.routers import Router, RouteTable, included
from veter.routing import (
    Endpoint,
    ErrorResponder,
    Handler,
    Middleware,
    Route,
    compose,
    compose_unmatched,
    is_async_callable,
    method_not_allowed,
    not_found,
    path_for,
)
from veter.typed import typed_route
from veter.websockets import Sessions, entry_for

__all__ = ["App"]

log = logging.getLogger("veter.error")
#: What the app says once when it is frozen for serving (e.g. a page left out).
server_log = logging.getLogger("veter.server")

#: Route names of the health probes and the metrics scrape, left out of the access
#: log unless asked for.
PROBE_ROUTES = ("veter.healthz", "veter.readyz", "veter.metrics")

H = TypeVar("H", bound=Handler)
Hook = Callable[[], Any]
ExceptionHandler = Callable[[Any, Any], Response | Awaitable[Response]]
E = TypeVar("E", bound=ExceptionHandler)


class App(RouteTable):
    """A veter application.

    Declare routes with the decorators, then serve it with ``veter run module:app``
    or ``app.run()``, or test it with ``veter.testing.TestClient(app)``. Routes and
    middleware are fixed once the app starts serving.
    """

    #: The app is another interface's (ASGI), hosted: veter's routes are not used.
    hosted: ClassVar[bool] = False

    def __init__(self, *, openapi: OpenAPI | None = None, **settings: Any) -> None:
        """``openapi``: serve the app's OpenAPI document (``veter.OpenAPI``); the
        other keywords are server settings (docs/settings.md)."""
        #: Shared objects for handlers (pools, clients): ``request.app.state.x``.
        self.state = State()
        #: Default server settings for ``app.run`` and ``veter run`` (flags override).
        self.config = ServerConfig().with_(**settings)
        self._routes: list[Route] = []
        self._middleware: list[Middleware] = []
        self._startup: list[Hook] = []
        self._shutdown: list[Hook] = []
        self._exception_handlers: dict[type[BaseException], ExceptionHandler] = {}
        self._not_found: Handler | None = None
        self._method_not_allowed: Handler | None = None
        self._frozen = False
        self._started = False
        self._draining = False
        self._leaving = False
        self._serving_config = self.config
        #: The open WebSocket connections of this process.
        self.websockets = Sessions()
        self.openapi = openapi
        self._openapi_body: bytes | None = None
        #: Replacements for dependencies (``Depends``), for tests:
        #: ``app.dependency_overrides[get_db] = fake_db``; read per request.
        self.dependency_overrides: dict[Callable[..., Any], Callable[..., Any]] = {}

    # -- routes ---------------------------------------------------------------

    def _add(self, route: Route) -> None:
        self._check_open("add a route")
        self._routes.append(route)

    def include(self, router: Router, *, prefix: str = "") -> None:
        """Serve ``router``'s routes (under ``prefix``, then the router's own prefix),
        with its tags and middleware; the routes are copied now."""
        self._check_open("include a router")
        self._routes.extend(included(router, prefix))

    def static(
        self, prefix: str, directory: str | os.PathLike[str], *, index: str | None = "index.html"
    ) -> Any:
        """Serve the files under ``directory`` at ``prefix`` (ETag, 304, Range; no
        path can leave the directory). Returns the ``veter.staticfiles.StaticFiles``."""
        from veter.staticfiles import mount

        return mount(self, prefix, directory, index=index)

    @property
    def routes(self) -> list[Route]:
        return list(self._routes)

    def url_for(self, name: str, /, **params: object) -> str:
        """The path of the route called ``name`` with ``params`` filled in:
        ``app.url_for("get_user", uid=7)`` -> ``"/users/7"``. A route is called by its
        ``name=`` or else its handler's ``__name__``; an unknown or ambiguous name,
        and missing, extra or mistyped parameters, raise ``ValueError``/``TypeError``."""
        found = [r for r in self._routes if (r.name or getattr(r.handler, "__name__", None)) == name]
        if not found:
            raise ValueError(f"url_for: no route is named {name!r}")
        paths = {r.path for r in found}
        if len(paths) > 1:
            raise ValueError(
                f"url_for: {name!r} names several paths ({', '.join(sorted(paths))}); give the routes name="
            )
        return path_for(found[0].path, params)

    # -- middleware, hooks, errors ---------------------------------------------

    def middleware(self, fn: Middleware) -> Middleware:
        """Register ``async def mw(request, call_next) -> Response``; the first
        registered is the outermost."""
        self._check_open("add middleware")
        if not inspect.iscoroutinefunction(fn):
            raise TypeError("middleware must be an async def function (request, call_next)")
        self._middleware.append(fn)
        return fn

    add_middleware = middleware

    def not_found(self, handler: H) -> H:
        """Register ``handler(request)`` (sync or async) to answer requests whose path
        no route has, instead of the plain 404. App middleware runs around it."""
        self._check_open("set the not-found handler")
        self._not_found = handler
        return handler

    def method_not_allowed(self, handler: H) -> H:
        """Register ``handler(request, allow)`` (sync or async) to answer requests whose
        path has routes but none for their method, instead of the plain 405; ``allow``
        is the value for the ``Allow`` header. App middleware runs around it."""
        self._check_open("set the method-not-allowed handler")
        self._method_not_allowed = handler
        return handler

    def on_startup(self, fn: Hook) -> Hook:
        """Run ``fn`` (sync or async) in each serving process before it accepts requests."""
        self._startup.append(fn)
        return fn

    def on_shutdown(self, fn: Hook) -> Hook:
        """Run ``fn`` (sync or async) after the last request, in reverse order of startup."""
        self._shutdown.append(fn)
        return fn

    def exception_handler(self, exc_type: type[BaseException]) -> Callable[[E], E]:
        """Register ``handler(request, exc) -> Response`` (``def`` or ``async def``) for
        ``exc_type`` and its subclasses; the most specific registration wins.

        Two layers, as in Starlette: an ``HTTPException`` (a 404 you raised, the 400 of
        a bad JSON body) is answered by a handler registered for ``HTTPException`` or a
        subclass of it, else as the exception says; handlers for other classes, a
        catch-all ``Exception`` one included, see only unexpected exceptions.
        """

        def register(fn: E) -> E:
            self._check_open("add an exception handler")
            if not callable(fn):
                raise TypeError(f"exception handler for {exc_type.__name__} is not callable: {fn!r}")
            self._exception_handlers[exc_type] = fn
            return fn

        return register

    def _error_handler_for(self, exc: BaseException) -> tuple[type[BaseException], ExceptionHandler] | None:
        # An HTTPException looks no further than HTTPException in its classes, so a
        # handler for Exception (or another base it shares) never takes it.
        for klass in type(exc).__mro__:
            custom = self._exception_handlers.get(klass)
            if custom is not None:
                return klass, custom
            if klass is HTTPException:
                break
        return None

    def handle_error(self, request: Any, exc: BaseException) -> Response:
        """The response for an exception a handler raised (the core calls this)."""
        found = self._error_handler_for(exc)
        if found is not None:
            klass, custom = found
            try:
                response = custom(request, exc)
                if inspect.isawaitable(response):
                    # Reached only for the core's own errors when handlers are async
                    # (routes then handle theirs in handle_error_async): an async
                    # handler that does not suspend answers here too.
                    response = _finish_now(response)
            except Exception:
                log.exception("exception handler for %s failed", klass.__name__)
                return self._unhandled(request, exc)
            return self._checked(request, exc, klass, response)
        return self._default_answer(request, exc)

    async def handle_error_async(self, request: Any, exc: BaseException) -> Response:
        """``handle_error`` for routes wrapped in Python: async handlers are awaited."""
        found = self._error_handler_for(exc)
        if found is None:
            return self._default_answer(request, exc)
        klass, custom = found
        try:
            response = custom(request, exc)
            if inspect.isawaitable(response):
                response = await response
        except Exception:
            log.exception("exception handler for %s failed", klass.__name__)
            return self._unhandled(request, exc)
        return self._checked(request, exc, klass, response)

    def _checked(
        self, request: Any, exc: BaseException, klass: type[BaseException], response: Any
    ) -> Response:
        if isinstance(response, Response):
            return response
        log.error("exception handler for %s returned %r, not a Response", klass.__name__, response)
        return self._unhandled(request, exc)

    def _default_answer(self, request: Any, exc: BaseException) -> Response:
        if isinstance(exc, RequestValidationError):
            return json_response({"detail": exc.errors}, status=422, headers=exc.headers)
        if isinstance(exc, HTTPException):
            return Response(exc.detail, status=exc.status, headers=exc.headers)
        return self._unhandled(request, exc)

    def _unhandled(self, request: Any, exc: BaseException) -> Response:
        log.error(
            "unhandled error in %s %s",
            getattr(request, "method", "?"),
            getattr(request, "path", "?"),
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        return Response("Internal Server Error", status=500)

    # -- lifecycle -------------------------------------------------------------

    def build_dispatcher(
        self, config: ServerConfig | None = None, *, access_log: _core.LogFile | None = None
    ) -> _core.Dispatcher:
        """Freeze the app and build the core's dispatcher (raises on route conflicts).
        ``access_log``: where the core writes one line per response (None: nowhere)."""
        config = config or self.config
        self._serving_config = config
        if self.openapi is not None and not self._frozen:
            self._add_openapi_routes(self.openapi)
        self._frozen = True
        table = self._endpoints()
        skip = [] if config.access_log_health else [r.path for r in self._routes if r.name in PROBE_ROUTES]
        # Requests no route takes go to Python only when the app has something to say
        # about them; else the core answers 404/405 itself.
        unmatched = None
        if self._middleware or self._not_found or self._method_not_allowed:
            unmatched = compose_unmatched(
                self._not_found or not_found,
                self._method_not_allowed or method_not_allowed,
                self._middleware,
                self.handle_error_async if self._async_error_handlers() else self.handle_error,
            )
        return _core.Dispatcher(
            table,
            self,
            self.handle_error,
            config,
            access_log=access_log,
            access_log_skip=skip,
            unmatched=unmatched,
        )

    def _endpoints(self) -> list[Endpoint]:
        """The routes as the core takes them: handlers inside the middleware."""
        table: list[Endpoint] = []
        # Bound methods are made anew on each access: compare the choice, not identity.
        wrap = self._async_error_handlers()
        on_error: ErrorResponder = self.handle_error_async if wrap else self.handle_error
        for route in self._routes:
            serving = typed_route(route, self.dependency_overrides, self._serving_config)
            if route.websocket:
                entry = entry_for(route.handler, route.websocket_settings, self._config, self.websockets)
                serving = dataclasses.replace(route, handler=entry)
            middleware = [*self._middleware, *route.middleware]
            target, is_async = compose(serving, middleware, on_error, wrap=wrap)
            table.append(
                Endpoint(route.methods, route.path, target, is_async, serving.stream_body, route.websocket)
            )
        return table

    def _add_openapi_routes(self, openapi: OpenAPI) -> None:
        def hidden(path: str, handler: Handler, name: str) -> Route:
            return Route(path, ("GET",), handler, name=name, include_in_schema=False)

        routes = [hidden(openapi.path, self._openapi_answer, "veter.openapi")]
        if openapi.docs_path is not None:
            from veter.docs_page import INSTALL_HINT, DocsPage, find_assets

            if openapi.docs_page_required or find_assets() is not None:
                # Raises when the app named the page and swagger-ui-py is missing.
                page = DocsPage(openapi.title, openapi.path, openapi.docs_path)
                routes.append(hidden(openapi.docs_path, page.page, "veter.docs"))
                routes.append(hidden(f"{openapi.docs_path}/assets/{{name}}", page.asset, "veter.docs_assets"))
            else:
                # The document never needs an extra: the page the app did not name is
                # left out, said once (the app is frozen once).
                server_log.info(
                    "API docs page not served at %s: it needs the swagger-ui-py package: %s",
                    openapi.docs_path,
                    INSTALL_HINT,
                )
        self._routes.extend(routes)

    def openapi_document(self) -> dict[str, Any]:
        """The app's OpenAPI 3.1 document (``veter.OpenAPI`` describes the service)."""
        return document(self.openapi or OpenAPI(), self._routes)

    def _openapi_answer(self, request: Any) -> Response:
        # Made on the first request, once every route is known, then kept.
        if self._openapi_body is None:
            self._openapi_body = orjson.dumps(self.openapi_document())
        return Response(self._openapi_body, content_type="application/json")

    def _async_error_handlers(self) -> bool:
        """Whether an exception handler is async. Routes then answer their
        exceptions in Python, to await it (a cost only such apps pay); else the core
        calls ``handle_error`` itself."""
        return any(is_async_callable(fn) for fn in self._exception_handlers.values())

    def _config(self) -> ServerConfig:
        return self._serving_config

    def serve_with(self, config: ServerConfig) -> None:
        """Called by the server before the startup hooks: the settings it serves with."""
        self._serving_config = config

    @property
    def started(self) -> bool:
        """True once every startup hook has run (in this process)."""
        return self._started

    @property
    def draining(self) -> bool:
        """True once the server stopped accepting and is finishing in-flight requests."""
        return self._draining

    @property
    def leaving(self) -> bool:
        """True once the instance was told to stop and is in its drain delay (or later):
        readiness is false so the load balancer stops sending it traffic."""
        return self._leaving or self._draining

    def begin_leaving(self) -> None:
        """Called by the server when its drain delay starts (readiness turns false)."""
        self._leaving = True

    def begin_draining(self) -> None:
        """Called by the server when a graceful stop starts (readiness turns false)."""
        self._draining = True

    async def startup(self) -> None:
        """Run the startup hooks in order."""
        self._draining = False
        self._leaving = False
        for hook in self._startup:
            await _maybe_await(hook())
        self._started = True

    async def shutdown(self) -> None:
        """Run the shutdown hooks in reverse order; every hook runs even if one fails."""
        errors: list[BaseException] = []
        for hook in reversed(self._shutdown):
            try:
                await _maybe_await(hook())
            except Exception as exc:
                log.exception("shutdown hook %r failed", hook)
                errors.append(exc)
        if errors:
            raise errors[0]

    def run(self, host: str | None = None, port: int | None = None, **settings: Any) -> None:
        """Serve in this process until SIGINT/SIGTERM (development and simple deployments)."""
        from veter.server import run

        changes = dict(settings)
        if host is not None:
            changes["host"] = host
        if port is not None:
            changes["port"] = port
        code = run(self, self.config.with_(**changes))
        if code:
            raise SystemExit(code)

    def _check_open(self, what: str) -> None:
        if self._frozen:
            raise RuntimeError(f"cannot {what} after the app started serving")


def _finish_now(awaitable: Any) -> Any:
    """The value of an awaitable that completes without suspending (else an error)."""
    coroutine = awaitable.__await__()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("an async exception handler suspended where the core needs its answer at once")


async def _maybe_await(value: Any) -> Any:
    if isinstance(value, Awaitable):
        return await value
    return value
