from __future__ import annotations

import functools

import pytest

import veter
from veter.routing import Route, compose, is_async_callable, normalise_methods


def plain(request: veter.Request) -> str:
    return "x"


async def coro(request: veter.Request) -> str:
    return "x"


class AsyncCallable:
    async def __call__(self, request: veter.Request) -> str:
        return "x"


def on_error(request: object, exc: BaseException) -> veter.Response:
    return veter.Response("err", status=500)


def test_is_async_callable() -> None:
    assert not is_async_callable(plain)
    assert is_async_callable(coro)
    assert is_async_callable(AsyncCallable())
    assert is_async_callable(functools.partial(coro))


def test_no_middleware_means_the_handler_itself() -> None:
    target, is_async = compose(Route("/", ("GET",), plain), [], on_error)
    assert target is plain
    assert not is_async
    target, is_async = compose(Route("/", ("GET",), coro), [], on_error)
    assert target is coro
    assert is_async


def test_methods_normalised() -> None:
    assert normalise_methods("get") == ("GET",)
    assert normalise_methods(["get", "GET", "post"]) == ("GET", "POST")
    with pytest.raises(ValueError, match="invalid HTTP method"):
        normalise_methods(["GE T"])
    with pytest.raises(ValueError, match="at least one method"):
        normalise_methods([])


def test_bad_paths_and_handlers() -> None:
    app = veter.App()
    with pytest.raises(ValueError, match="must start with '/'"):
        app.add_route("items", plain)
    with pytest.raises(TypeError, match="not callable"):
        app.add_route("/", "nope")  # type: ignore[arg-type]


def test_invalid_pattern_reported_at_startup() -> None:
    app = veter.App()
    app.add_route("/x{y}", plain)
    with pytest.raises(ValueError, match="invalid route pattern"):
        app.build_dispatcher()
