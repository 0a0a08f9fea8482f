"""Loading ``module:attribute`` app references given on the command line."""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, cast

from veter.app import App
from veter.hosted.detect import NotAnApp, detect

if TYPE_CHECKING:
    from veter.hosted.lifespan import AsgiCallable
    from veter.hosted.wsgi import WsgiCallable

__all__ = ["AppImportError", "import_app"]


class AppImportError(Exception):
    """The app reference could not be loaded; the message says why."""


def import_app(ref: str, interface: str = "auto") -> App:
    """Import ``ref`` ("package.module:app") with the current directory on sys.path.
    An ASGI or WSGI app (``interface``: auto, veter, asgi or wsgi) comes back
    wrapped in an ``AsgiApp`` or a ``WsgiApp``."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise AppImportError(f"app reference must look like 'module:app', got {ref!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name or module_name.startswith(f"{exc.name}."):
            raise AppImportError(f"could not import module {module_name!r}: {exc}") from exc
        raise
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AppImportError(f"module {module_name!r} has no attribute {attr!r}") from None
    try:
        kind = detect(obj, interface)
    except NotAnApp as exc:
        raise AppImportError(f"{ref}: {exc}") from None
    if kind == "asgi":
        from veter.hosted.asgi import AsgiApp

        return AsgiApp(cast("AsgiCallable", obj))
    if kind == "wsgi":
        from veter.hosted.wsgi import WsgiApp

        return WsgiApp(cast("WsgiCallable", obj))
    assert isinstance(obj, App)
    return obj
