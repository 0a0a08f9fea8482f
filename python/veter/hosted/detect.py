"""What an imported app object is: a ``veter.App``, an ASGI 3 or a WSGI callable."""

from __future__ import annotations

import inspect
from typing import Any, Literal

from veter.app import App

__all__ = ["Kind", "NotAnApp", "detect"]

Kind = Literal["veter", "asgi", "wsgi"]


class NotAnApp(TypeError):
    """The object is not something veter can serve; the message says what it is."""


def detect(obj: Any, interface: str = "auto") -> Kind:
    """``obj``'s interface: as given, or (``auto``) found by inspection.

    An ASGI 3 app is an ``async def app(scope, receive, send)`` or an object whose
    ``__call__`` is one (FastAPI, Starlette, Django's ``get_asgi_application()``,
    Litestar, Quart). ASGI 2 (a class called with the scope alone) is not served.
    A WSGI app is a plain callable taking ``(environ, start_response)`` (Flask,
    Django's ``get_wsgi_application()``, Bottle, Falcon's ``App``), or ``*args``
    (``wsgiref.validate.validator(app)``, middleware written as ``def app(*args)``).
    """
    if interface == "veter":
        if not isinstance(obj, App):
            raise NotAnApp(f"--interface veter: the object is {_describe(obj)}, not a veter.App")
        return "veter"
    if interface == "asgi":
        if isinstance(obj, App) or not callable(obj):
            raise NotAnApp(f"--interface asgi: the object is {_describe(obj)}, not an ASGI callable")
        return "asgi"
    if interface == "wsgi":
        if isinstance(obj, App) or not callable(obj) or _is_async(obj):
            raise NotAnApp(f"--interface wsgi: the object is {_describe(obj)}, not a WSGI callable")
        return "wsgi"
    if interface != "auto":
        raise ValueError(f"interface must be auto, veter, asgi or wsgi, got {interface!r}")
    if isinstance(obj, App):
        return "veter"
    if not callable(obj):
        raise NotAnApp(f"the object is {_describe(obj)}: neither a veter.App nor an ASGI app")
    if _is_async(obj):
        return "asgi"
    shape = _positional(obj)
    if shape is not None:
        required, named, star = shape
        if named == 3 and not star:
            # A plain def taking (scope, receive, send) that returns a coroutine.
            return "asgi"
        if required <= 2 and (named >= 2 or star):
            # A sync callable that takes (environ, start_response): a WSGI app, or
            # WSGI middleware written as ``def app(*args, **kwargs)`` (wsgiref's
            # validator, most wrappers). An ASGI 3 app is async or names its three.
            return "wsgi"
    described = "an unknown number of" if shape is None else str(shape[1])
    raise NotAnApp(
        f"cannot tell what the object is: {_describe(obj)}, a callable of {described} positional "
        "parameter(s) that is not async; an ASGI 3 app is async and takes (scope, receive, send), "
        "a WSGI app takes (environ, start_response). Name it with --interface asgi or wsgi "
        "if it is one."
    )


def _is_async(obj: Any) -> bool:
    call = obj if inspect.isfunction(obj) or inspect.ismethod(obj) else type(obj).__call__
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(obj)


def _positional(obj: Any) -> tuple[int, int, bool] | None:
    """``obj``'s positional parameters: how many must be given, how many are named,
    and whether it takes ``*args`` (None: its signature cannot be read)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = sig.parameters.values()
    named = [p for p in params if p.kind in kinds]
    required = sum(1 for p in named if p.default is inspect.Parameter.empty)
    star = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    return required, len(named), star


def _describe(obj: Any) -> str:
    kind = type(obj)
    return (
        f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else f"a {kind.__name__}"
    )
