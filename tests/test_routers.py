"""Routers (veter.routers): prefixes, nesting, tags, router middleware, and the
checks made when they are declared and when the app starts."""

from __future__ import annotations

from typing import Any

import pytest

import veter
from veter.routing import CallNext
from veter.testing import TestClient


def tagging(name: str) -> Any:
    async def middleware(request: veter.Request, call_next: CallNext) -> Any:
        response = await call_next(request)
        response.add_header("X-Seen", name)
        return response

    return middleware


def make_app() -> veter.App:
    app = veter.App()
    app.middleware(tagging("app"))
    users = veter.Router(prefix="/users", tags=["users"], middleware=[tagging("users")])

    @users.get("/")
    def list_users(request: veter.Request) -> list[str]:
        return ["ann"]

    @users.get("/{uid:int}", tags=["detail", "users"])
    def get_user(request: veter.Request, uid: int) -> dict[str, int]:
        return {"uid": uid}

    posts = veter.Router(prefix="/posts", middleware=[tagging("posts")])

    @posts.post("/{pid}")
    async def add_post(request: veter.Request, uid: int, pid: str) -> str:
        # A parameter in a prefix is passed like the route's own.
        return f"post {pid} by {uid}: {(await request.body()).decode()}"

    users.include(posts, prefix="/{uid:int}")
    app.include(users, prefix="/api")

    @app.get("/health")
    def health(request: veter.Request) -> str:
        return "ok"

    return app


def test_prefixes_join_and_nest() -> None:
    app = make_app()
    paths = sorted((r.path, r.methods) for r in app.routes)
    assert paths == [
        ("/api/users/", ("GET",)),
        ("/api/users/{uid:int}", ("GET",)),
        ("/api/users/{uid:int}/posts/{pid}", ("POST",)),
        ("/health", ("GET",)),
    ]
    with TestClient(app) as client:
        assert client.get("/api/users/").json() == ["ann"]
        assert client.get("/api/users/7").json() == {"uid": 7}
        assert client.post("/api/users/7/posts/x", content=b"hi").text == "post x by 7: hi"
        assert client.get("/users/").status == 404


def test_router_middleware_runs_inside_the_apps_around_its_routes_only() -> None:
    with TestClient(make_app()) as client:
        assert client.get("/api/users/7").headers.getall("x-seen") == ["users", "app"]
        assert client.post("/api/users/7/posts/x").headers.getall("x-seen") == ["posts", "users", "app"]
        assert client.get("/health").headers.getall("x-seen") == ["app"]


def test_tags_merge_outer_first_without_repeats() -> None:
    tags = {r.path: r.tags for r in make_app().routes}
    assert tags["/api/users/"] == ("users",)
    assert tags["/api/users/{uid:int}"] == ("users", "detail")
    assert tags["/api/users/{uid:int}/posts/{pid}"] == ("users",)


def test_routes_added_after_include_are_not_served() -> None:
    app = veter.App()
    router = veter.Router(prefix="/r")
    router.add_route("/a", lambda request: "a")
    app.include(router)
    router.add_route("/b", lambda request: "b")
    assert [r.path for r in app.routes] == ["/r/a"]


def test_websocket_routes_in_routers() -> None:
    app = veter.App()
    router = veter.Router(prefix="/ws")

    @router.websocket("/echo", max_message_size=1024)
    async def echo(ws: veter.WebSocket) -> None:
        await ws.accept()
        async for message in ws:
            await ws.send(message)

    app.include(router)
    with TestClient(app) as client, client.websocket_connect("/ws/echo") as ws:
        ws.send_text("hi")
        assert ws.receive_text() == "hi"


def test_a_conflict_across_routers_is_reported_at_startup() -> None:
    app = veter.App()
    one = veter.Router(prefix="/x")
    one.add_route("/a", lambda request: "1")
    two = veter.Router()
    two.add_route("/x/a", lambda request: "2")
    app.include(one)
    app.include(two)
    with pytest.raises(ValueError, match="/x/a"):
        app.build_dispatcher()


@pytest.mark.parametrize("prefix", ["users", "/users/", "/"])
def test_bad_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix starts with '/'"):
        veter.Router(prefix=prefix)
    with pytest.raises(ValueError, match="prefix starts with '/'"):
        veter.App().include(veter.Router(), prefix=prefix)


def test_bad_declarations() -> None:
    with pytest.raises(TypeError, match="async def"):
        veter.Router(middleware=[lambda request, call_next: None])
    with pytest.raises(TypeError, match="list of strings"):
        veter.Router(tags="users")
    with pytest.raises(TypeError, match=r"takes a veter\.Router"):
        veter.App().include(veter.App())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must start with '/'"):
        veter.Router().add_route("a", lambda request: "a")


def test_include_after_start_is_refused() -> None:
    app = veter.App()
    app.build_dispatcher()
    with pytest.raises(RuntimeError, match="cannot include a router after the app started serving"):
        app.include(veter.Router())
