"""Typed handlers: parameters, bodies and answers declared with types, validated
before the handler runs (see veter.params and docs/guide.md, "Typed handlers").

``typed_route`` is applied to every route when the app starts: a plain handler
(``def handler(request, **path_params)``) comes back unchanged and costs nothing;
a typed one is wrapped in the adapter its signature's plan describes.
"""

from __future__ import annotations

import dataclasses
import re

from veter.routing import Route, is_async_callable
from veter.typed.call import adapter_for
from veter.typed.signature import Plan, plan_for

__all__ = ["Plan", "path_names", "plan_of", "typed_route"]

_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}")


def path_names(template: str) -> set[str]:
    """The parameter names of a route's path template."""
    return set(_NAME.findall(template))


def plan_of(route: Route) -> Plan | None:
    """The plan of ``route``'s handler (None: a plain handler or a WebSocket route)."""
    if route.websocket:
        return None
    handler = route.handler
    where = f"{','.join(route.methods)} {route.path} ({getattr(handler, '__qualname__', repr(handler))})"
    return plan_for(handler, path_names(route.path), where)


def typed_route(route: Route) -> Route:
    """``route`` as the core calls it: unchanged, or with its typed adapter."""
    plan = plan_of(route)
    if plan is None:
        return route
    adapter = adapter_for(plan, is_async=is_async_callable(route.handler), blocking=route.blocking)
    return dataclasses.replace(route, handler=adapter, blocking=False)
