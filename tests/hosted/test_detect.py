"""Telling a veter.App from an ASGI or a WSGI app (``--interface``), and the errors
for the rest."""

from __future__ import annotations

from typing import Any

import pytest

import veter
from veter.hosted.detect import NotAnApp, detect
from veter.importer import AppImportError, import_app


async def asgi_function(scope: Any, receive: Any, send: Any) -> None:
    return None


class AsgiClass:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        return None


def returns_coroutine(scope: Any, receive: Any, send: Any) -> Any:
    return asgi_function(scope, receive, send)


def wsgi_like(environ: Any, start_response: Any) -> list[bytes]:
    return []


def test_veter_app() -> None:
    assert detect(veter.App()) == "veter"


@pytest.mark.parametrize("app", [asgi_function, AsgiClass(), returns_coroutine])
def test_asgi_apps(app: Any) -> None:
    assert detect(app) == "asgi"


def test_frameworks_are_asgi() -> None:
    fastapi = pytest.importorskip("fastapi")
    starlette = pytest.importorskip("starlette.applications")
    assert detect(fastapi.FastAPI()) == "asgi"
    assert detect(starlette.Starlette()) == "asgi"


def test_not_callable_is_named() -> None:
    with pytest.raises(NotAnApp, match=r"the object is a dict: neither a veter\.App nor an ASGI app"):
        detect({})


class WsgiClass:
    def __call__(self, environ: Any, start_response: Any) -> list[bytes]:
        return []


@pytest.mark.parametrize("app", [wsgi_like, WsgiClass()])
def test_wsgi_apps(app: Any) -> None:
    assert detect(app) == "wsgi"


def star_args_wrapper(*args: Any, **kwargs: Any) -> list[bytes]:
    return wsgi_like(*args, **kwargs)


def one_then_star(environ: Any, *args: Any) -> list[bytes]:
    return []


def test_wsgi_middleware_taking_star_args_is_wsgi() -> None:
    from wsgiref.validate import validator

    assert detect(validator(wsgi_like)) == "wsgi"
    assert detect(star_args_wrapper) == "wsgi"
    assert detect(one_then_star) == "wsgi"


def test_what_cannot_take_two_arguments_stays_ambiguous() -> None:
    def three_required_then_star(a: Any, b: Any, c: Any, *args: Any) -> None:
        return None

    with pytest.raises(NotAnApp, match=r"3 positional parameter\(s\).*--interface asgi or wsgi"):
        detect(three_required_then_star)
    with pytest.raises(NotAnApp, match=r"an unknown number of positional parameter\(s\)"):
        detect(max)


def test_frameworks_are_wsgi() -> None:
    flask = pytest.importorskip("flask")
    assert detect(flask.Flask("x")) == "wsgi"


def test_unknown_callable_is_named_with_the_way_out() -> None:
    def one(x: Any) -> None:
        return None

    with pytest.raises(NotAnApp, match=r"1 positional parameter\(s\).*--interface asgi or wsgi"):
        detect(one)


def test_forced_interfaces_are_checked() -> None:
    assert detect(returns_coroutine, "asgi") == "asgi"
    with pytest.raises(NotAnApp, match=r"--interface veter: the object is"):
        detect(asgi_function, "veter")
    with pytest.raises(NotAnApp, match=r"--interface asgi: the object is a veter\.app\.App"):
        detect(veter.App(), "asgi")
    assert detect(wsgi_like, "wsgi") == "wsgi"
    with pytest.raises(NotAnApp, match=r"--interface wsgi: the object is a function, not a WSGI"):
        detect(asgi_function, "wsgi")
    with pytest.raises(ValueError, match=r"interface must be auto, veter, asgi or wsgi"):
        detect(asgi_function, "wsgi2")


def test_import_wraps_an_asgi_app() -> None:
    app = import_app("tests.hosted.apps.raw:app")
    assert app.hosted
    assert isinstance(app, veter.App)


def test_import_wraps_a_wsgi_app() -> None:
    from veter.hosted import WsgiApp

    app = import_app("tests.hosted.apps.wsgi_raw:app")
    assert isinstance(app, WsgiApp)
    assert app.hosted


def test_import_error_names_the_reference() -> None:
    with pytest.raises(AppImportError, match=r"tests\.hosted\.apps\.raw:ROUTES: the object is a dict"):
        import_app("tests.hosted.apps.raw:ROUTES")
