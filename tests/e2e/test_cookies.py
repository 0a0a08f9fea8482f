"""Cookies through a real server and a real client's cookie jar (httpx): what veter
sets is stored, sent back, and removed by delete_cookie."""

from __future__ import annotations

from collections.abc import Callable

import httpx

import veter

from .conftest import RunningServer

Serve = Callable[..., RunningServer]


def make_app() -> veter.App:
    app = veter.App()

    @app.post("/login")
    def login(request: veter.Request) -> veter.Response:
        response = veter.Response("in")
        response.set_cookie("sid", "abc.123", httponly=True, max_age=600)
        response.set_cookie("theme", "dark", path="/prefs")
        return response

    @app.get("/me")
    def me(request: veter.Request) -> dict[str, str]:
        return request.cookies

    @app.get("/prefs/theme")
    def theme(request: veter.Request) -> dict[str, str]:
        return request.cookies

    @app.post("/logout")
    def logout(request: veter.Request) -> veter.Response:
        response = veter.Response("out")
        response.delete_cookie("sid")
        return response

    return app


def test_set_sent_back_scoped_by_path_and_deleted(serve: Serve) -> None:
    server = serve(make_app())
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as client:
        assert client.post("/login").status_code == 200
        assert client.get("/me").json() == {"sid": "abc.123"}
        assert client.get("/prefs/theme").json() == {"sid": "abc.123", "theme": "dark"}
        assert client.post("/logout").status_code == 200
        assert client.get("/me").json() == {}
        assert client.get("/prefs/theme").json() == {"theme": "dark"}
