"""Typed handlers: parameters, bodies and answers declared with types, validated
before the handler runs (see veter.params and docs/guide.md, "Typed handlers").

``typed_route`` is applied to every route when the app starts: a plain handler
(``def handler(request, **path_params)``) comes back unchanged and costs nothing;
a typed one is wrapped in the adapter its signature's plan describes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, MutableMapping
from typing import Any

from veter.config import ServerConfig
from veter.routing import PATH_PARAM, Route, is_async_callable
from veter.typed.call import adapter_for
from veter.typed.signature import Plan, plan_for

__all__ = ["Plan", "path_names", "plan_of", "typed_route"]


def path_names(template: str) -> set[str]:
    """The parameter names of a route's path template."""
    return {match.group(1) for match in PATH_PARAM.finditer(template)}


def plan_of(route: Route) -> Plan | None:
    """The plan of ``route``'s handler (None: a plain handler or a WebSocket route)."""
    if route.websocket:
        return None
    return plan_for(route.handler, path_names(route.path), _where(route))


def typed_route(
    route: Route,
    overrides: MutableMapping[Callable[..., Any], Callable[..., Any]],
    config: ServerConfig | None = None,
) -> Route:
    """``route`` as the core calls it: unchanged, or with its typed adapter.
    ``overrides``: the app's ``dependency_overrides``, read per request;
    ``config``: the settings served with (their limits; the defaults without)."""
    plan = plan_of(route)
    if plan is None:
        return route
    try:
        adapter = _adapter(route, plan, overrides, config or ServerConfig())
    except TypeError as exc:  # what msgspec refuses in a model made from the signature
        raise TypeError(f"{_where(route)}: {exc}") from None
    # A route taking files reads its body as it arrives: a large upload goes to
    # disk as it comes, never whole into memory.
    stream_body = route.stream_body or plan.streams_files
    return dataclasses.replace(route, handler=adapter, blocking=False, stream_body=stream_body)


def _adapter(
    route: Route,
    plan: Plan,
    overrides: MutableMapping[Callable[..., Any], Callable[..., Any]],
    config: ServerConfig,
) -> Callable[..., Any]:
    return adapter_for(
        plan,
        is_async=is_async_callable(route.handler),
        blocking=route.blocking,
        overrides=overrides,
        path_names=path_names(route.path),
        where=_where(route),
        max_json_depth=config.max_json_depth,
        streams=route.stream_body or plan.streams_files,
    )


def _where(route: Route) -> str:
    handler = route.handler
    return f"{','.join(route.methods)} {route.path} ({getattr(handler, '__qualname__', repr(handler))})"
