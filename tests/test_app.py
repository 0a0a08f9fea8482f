"""App behaviour through the TestClient (the same Rust protocol, no sockets)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading

import pytest

import veter
from veter.routing import CallNext
from veter.testing import TestClient


def make_app() -> veter.App:
    app = veter.App()

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "hello"

    @app.get("/bytes")
    def raw(request: veter.Request) -> bytes:
        return b"\x00\x01"

    @app.get("/json")
    def as_json(request: veter.Request) -> dict[str, object]:
        return {"a": [1, 2]}

    @app.get("/list")
    async def as_list(request: veter.Request) -> list[int]:
        return [1, 2, 3]

    @app.get("/items/{item_id:int}")
    async def item(request: veter.Request, item_id: int) -> dict[str, object]:
        return {"id": item_id, "type": type(item_id).__name__}

    @app.get("/files/{rest:path}")
    def files(request: veter.Request, rest: str) -> str:
        return rest

    @app.get("/users/{name}")
    def user(request: veter.Request, name: str) -> str:
        return f"user {name}"

    @app.route("/multi", methods=["POST", "PUT"])
    async def multi(request: veter.Request) -> veter.Response:
        return veter.json({"method": request.method, "body": (await request.body()).decode()}, status=201)

    @app.get("/raise")
    def boom(request: veter.Request) -> str:
        raise RuntimeError("boom")

    @app.get("/teapot")
    async def teapot(request: veter.Request) -> str:
        raise veter.HTTPException(418, "short and stout", headers={"X-Pot": "1"})

    @app.get("/suspend")
    async def suspend(request: veter.Request) -> str:
        await asyncio.sleep(0.001)
        return "woke"

    @app.get("/bad-return")
    def bad_return(request: veter.Request) -> object:
        return 42

    return app


@pytest.fixture
def client() -> TestClient:
    return TestClient(make_app())


def test_str_is_text_plain(client: TestClient) -> None:
    r = client.get("/")
    assert r.status == 200
    assert r.text == "hello"
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.headers["content-length"] == "5"
    assert r.headers["server"] == "veter"
    assert "date" in r.headers


def test_bytes_dict_list(client: TestClient) -> None:
    r = client.get("/bytes")
    assert (r.content, r.headers["content-type"]) == (b"\x00\x01", "application/octet-stream")
    r = client.get("/json")
    assert (r.json(), r.headers["content-type"]) == ({"a": [1, 2]}, "application/json")
    assert client.get("/list").json() == [1, 2, 3]


def test_path_params(client: TestClient) -> None:
    assert client.get("/items/42").json() == {"id": 42, "type": "int"}
    assert client.get("/items/-3").json() == {"id": -3, "type": "int"}
    assert client.get("/items/abc").status == 404
    assert client.get("/files/a/b/c.txt").text == "a/b/c.txt"
    assert client.get("/users/J%C3%BCrgen").text == "user Jürgen"


def test_404_and_405(client: TestClient) -> None:
    r = client.get("/nope")
    assert r.status == 404
    r = client.delete("/multi")
    assert r.status == 405
    assert r.headers["allow"] == "POST, PUT"


def test_head_uses_get_route(client: TestClient) -> None:
    r = client.head("/")
    assert r.status == 200
    assert r.content == b""
    assert r.headers["content-length"] == "5"


def test_post_body(client: TestClient) -> None:
    r = client.post("/multi", content=b"payload")
    assert r.status == 201
    assert r.json() == {"method": "POST", "body": "payload"}


def test_handler_exception_is_500_and_logged(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="veter.error"):
        r = client.get("/raise")
    assert r.status == 500
    assert r.text == "Internal Server Error"
    assert "boom" not in r.text
    assert any("RuntimeError: boom" in (rec.exc_text or "") or rec.exc_info for rec in caplog.records)


def test_http_exception(client: TestClient) -> None:
    r = client.get("/teapot")
    assert (r.status, r.text, r.headers["x-pot"]) == (418, "short and stout", "1")


def test_suspending_handler(client: TestClient) -> None:
    assert client.get("/suspend").text == "woke"


def test_bad_return_type_is_500(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="veter.error"):
        r = client.get("/bad-return")
    assert r.status == 500
    assert "handler returned int" in caplog.text


def test_exception_handler_most_specific_wins() -> None:
    app = veter.App()

    class Base(Exception):
        pass

    class Child(Base):
        pass

    @app.exception_handler(Base)
    def on_base(request: veter.Request, exc: Exception) -> veter.Response:
        return veter.text("base", status=400)

    @app.exception_handler(Child)
    def on_child(request: veter.Request, exc: Exception) -> veter.Response:
        return veter.text("child", status=409)

    @app.get("/b")
    def b(request: veter.Request) -> str:
        raise Base()

    @app.get("/c")
    async def c(request: veter.Request) -> str:
        await asyncio.sleep(0)
        raise Child()

    client = TestClient(app)
    assert (client.get("/b").status, client.get("/b").text) == (400, "base")
    assert (client.get("/c").status, client.get("/c").text) == (409, "child")


@pytest.mark.parametrize("with_middleware", [False, True])
def test_async_exception_handlers_are_awaited(with_middleware: bool) -> None:
    app = veter.App()
    if with_middleware:

        @app.middleware
        async def passthrough(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
            return await call_next(request)  # type: ignore[return-value]

    @app.exception_handler(ValueError)
    async def on_value(request: veter.Request, exc: Exception) -> veter.Response:
        await asyncio.sleep(0)  # it really suspends
        return veter.text(f"bad value: {exc}", status=422)

    @app.get("/sync")
    def sync(request: veter.Request) -> str:
        raise ValueError("sync")

    @app.get("/async")
    async def async_(request: veter.Request) -> str:
        raise ValueError("async")

    @app.get("/fine")
    def fine(request: veter.Request) -> str:
        return "fine"

    with TestClient(app) as client:
        assert (client.get("/sync").status, client.get("/sync").text) == (422, "bad value: sync")
        assert (client.get("/async").status, client.get("/async").text) == (422, "bad value: async")
        assert client.get("/fine").text == "fine"


def test_a_catch_all_handler_does_not_take_http_exceptions() -> None:
    app = veter.App()

    @app.exception_handler(Exception)
    def catch_all(request: veter.Request, exc: Exception) -> veter.Response:
        return veter.text("oops", status=500)

    @app.get("/missing")
    def missing(request: veter.Request) -> str:
        raise veter.HTTPException(404, "no such item")

    @app.post("/json")
    async def json_body(request: veter.Request) -> str:
        return str(await request.json())  # a bad body raises the core's 400

    @app.get("/boom")
    def boom(request: veter.Request) -> str:
        raise RuntimeError("boom")

    with TestClient(app) as client:
        assert (client.get("/missing").status, client.get("/missing").text) == (404, "no such item")
        assert client.post("/json", content=b"{not json").status == 400
        assert (client.get("/boom").status, client.get("/boom").text) == (500, "oops")


def test_http_exception_handlers_see_http_exceptions() -> None:
    app = veter.App()

    class Conflict(veter.HTTPException, ValueError):
        pass

    @app.exception_handler(veter.HTTPException)
    async def http_errors(request: veter.Request, exc: veter.HTTPException) -> veter.Response:
        return veter.json({"error": exc.detail}, status=exc.status)

    @app.exception_handler(ValueError)
    def values(request: veter.Request, exc: Exception) -> veter.Response:
        return veter.text("value", status=400)

    @app.get("/conflict")
    def conflict(request: veter.Request) -> str:
        raise Conflict(409, "taken")

    @app.get("/value")
    def value(request: veter.Request) -> str:
        raise ValueError("x")

    with TestClient(app) as client:
        r = client.get("/conflict")
        assert (r.status, r.json()) == (409, {"error": "taken"})
        assert client.get("/value").text == "value"


def test_a_failing_async_exception_handler_is_a_logged_500(caplog: pytest.LogCaptureFixture) -> None:
    app = veter.App()

    @app.exception_handler(KeyError)
    async def broken(request: veter.Request, exc: Exception) -> veter.Response:
        raise RuntimeError("handler broke")

    @app.get("/k")
    def k(request: veter.Request) -> str:
        raise KeyError("k")

    with TestClient(app) as client:
        assert client.get("/k").status == 500
    assert "exception handler for KeyError failed" in caplog.text


def test_middleware_order_and_short_circuit() -> None:
    app = veter.App()
    calls: list[str] = []

    @app.middleware
    async def outer(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
        calls.append("outer")
        if request.headers.get("x-deny"):
            return veter.text("denied", status=403)
        response = await call_next(request)
        response.set_header("X-Outer", "1")
        return response

    @app.middleware
    async def inner(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
        calls.append("inner")
        response = await call_next(request)
        response.set_header("X-Inner", "1")
        return response

    @app.get("/x/{n:int}")
    def handler(request: veter.Request, n: int) -> dict[str, int]:
        calls.append("handler")
        return {"n": n}

    @app.get("/err")
    def err(request: veter.Request) -> str:
        raise veter.HTTPException(404, "gone")

    client = TestClient(app)
    r = client.get("/x/5")
    assert r.json() == {"n": 5}
    assert (r.headers["x-outer"], r.headers["x-inner"]) == ("1", "1")
    assert calls == ["outer", "inner", "handler"]
    r = client.get("/x/5", headers={"X-Deny": "1"})
    assert (r.status, r.text) == (403, "denied")
    r = client.get("/err")
    assert (r.status, r.headers.get("x-outer")) == (404, "1")


def test_blocking_route_runs_in_thread() -> None:
    app = veter.App()
    loop_thread: list[int] = []

    @app.get("/block", blocking=True)
    def block(request: veter.Request) -> dict[str, bool]:
        return {"same": threading.get_ident() in loop_thread}

    @app.get("/inline")
    def inline(request: veter.Request) -> dict[str, bool]:
        loop_thread.append(threading.get_ident())
        return {"same": True}

    client = TestClient(app)
    assert client.get("/inline").json() == {"same": True}
    assert client.get("/block").json() == {"same": False}


def test_blocking_refuses_async() -> None:
    app = veter.App()

    async def handler(request: veter.Request) -> str:
        return "x"

    with pytest.raises(TypeError, match="blocking=True"):
        app.add_route("/", handler, blocking=True)


def test_run_in_thread_copies_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var")
    app = veter.App()

    @app.get("/")
    async def handler(request: veter.Request) -> str:
        var.set("set-in-handler")
        return await veter.run_in_thread(var.get)

    assert TestClient(app).get("/").text == "set-in-handler"


def test_lifespan_hooks_run_in_order() -> None:
    app = veter.App()
    events: list[str] = []

    @app.on_startup
    async def open_pool() -> None:
        events.append("startup-async")

    @app.on_startup
    def sync_start() -> None:
        events.append("startup-sync")

    @app.on_shutdown
    def first_registered() -> None:
        events.append("shutdown-1")

    @app.on_shutdown
    async def second_registered() -> None:
        events.append("shutdown-2")

    @app.get("/")
    def index(request: veter.Request) -> str:
        return ",".join(events)

    with TestClient(app) as client:
        assert client.get("/").text == "startup-async,startup-sync"
    assert events[-2:] == ["shutdown-2", "shutdown-1"]


def test_route_conflict_names_both_routes() -> None:
    app = veter.App()
    app.add_route("/users/{id}", lambda r, id: "a")
    app.add_route("/users/{name}", lambda r, name: "b")
    with pytest.raises(ValueError, match=r"/users/\{id\}.*/users/\{name\}|/users/\{name\}.*/users/\{id\}"):
        app.build_dispatcher()


def test_routes_frozen_after_start() -> None:
    app = make_app()
    app.build_dispatcher()
    with pytest.raises(RuntimeError, match="after the app started"):
        app.add_route("/late", lambda r: "x")


def test_app_state_and_request_state() -> None:
    app = veter.App()
    app.state.greeting = "hi"

    @app.middleware
    async def tag(request: veter.Request, call_next: veter.routing.CallNext) -> veter.Response:
        request.state.user = "ann"
        return await call_next(request)

    @app.get("/")
    def index(request: veter.Request) -> str:
        return f"{request.app.state.greeting} {request.state.user}"

    assert TestClient(app).get("/").text == "hi ann"


def test_server_header_configurable() -> None:
    app = veter.App(server_header=None)
    app.add_route("/", lambda r: "x")
    assert "server" not in TestClient(app).get("/").headers
    app = veter.App(server_header="edge")
    app.add_route("/", lambda r: "x")
    assert TestClient(app).get("/").headers["server"] == "edge"


def test_unknown_setting_is_an_error() -> None:
    with pytest.raises(TypeError, match="unknown server setting"):
        veter.App(max_bodyy=1)


def test_app_middleware_sees_requests_no_route_takes() -> None:
    """App middleware runs around the 404 and 405 answers too, so it can answer a
    CORS preflight to a route that has no OPTIONS, or stamp every response."""
    app = veter.App()
    seen: list[tuple[str, str]] = []

    @app.get("/items")
    def items(request: veter.Request) -> str:
        return "items"

    @app.middleware
    async def stamp(request: veter.Request, call_next: CallNext) -> veter.Response:
        seen.append((request.method, request.path))
        if request.method == "OPTIONS":
            return veter.Response(b"", status=204, headers={"Access-Control-Allow-Origin": "*"})
        response = await call_next(request)
        response.set_header("X-Stamp", "1")
        return response

    with TestClient(app) as client:
        assert client.get("/items").headers["x-stamp"] == "1"
        missing = client.get("/nowhere")
        assert (missing.status_code, missing.text, missing.headers["x-stamp"]) == (404, "Not Found", "1")
        wrong = client.post("/items")
        assert (wrong.status_code, wrong.headers["allow"], wrong.headers["x-stamp"]) == (
            405,
            "GET, HEAD",
            "1",
        )
        preflight = client.request("OPTIONS", "/items")
        assert (preflight.status_code, preflight.headers["access-control-allow-origin"]) == (204, "*")
        head = client.request("HEAD", "/nowhere")
        assert (head.status_code, head.content) == (404, b"")
    assert seen == [
        ("GET", "/items"),
        ("GET", "/nowhere"),
        ("POST", "/items"),
        ("OPTIONS", "/items"),
        ("HEAD", "/nowhere"),
    ]


def test_custom_not_found_and_method_not_allowed_handlers() -> None:
    app = veter.App()

    @app.get("/items")
    def items(request: veter.Request) -> str:
        return "items"

    @app.not_found
    def missing(request: veter.Request) -> veter.Response:
        return veter.json({"error": "no such page", "path": request.path}, status=404)

    @app.method_not_allowed
    async def refused(request: veter.Request, allow: str) -> veter.Response:
        await asyncio.sleep(0)
        return veter.Response(f"use {allow}", status=405, headers={"Allow": allow})

    with TestClient(app) as client:
        assert client.get("/items").text == "items"
        response = client.get("/a%20b")
        assert (response.status_code, response.json()) == (404, {"error": "no such page", "path": "/a b"})
        response = client.delete("/items")
        assert (response.status_code, response.text, response.headers["allow"]) == (
            405,
            "use GET, HEAD",
            "GET, HEAD",
        )


def test_an_unmatched_handler_that_fails_is_answered_like_a_route(caplog: pytest.LogCaptureFixture) -> None:
    app = veter.App()

    @app.not_found
    def missing(request: veter.Request) -> veter.Response:
        if request.path == "/gone":
            raise veter.HTTPException(410, "gone for good")
        raise RuntimeError("broken not-found page")

    with TestClient(app) as client, caplog.at_level(logging.ERROR, logger="veter.error"):
        assert (client.get("/gone").status_code, client.get("/gone").text) == (410, "gone for good")
        assert client.get("/other").status_code == 500
    assert "broken not-found page" in caplog.text


def test_unmatched_handlers_are_fixed_once_serving() -> None:
    app = veter.App()
    with TestClient(app), pytest.raises(RuntimeError, match="cannot set the not-found handler"):
        app.not_found(lambda request: "x")


def test_url_for() -> None:
    app = veter.App()
    router = veter.Router(prefix="/users")

    @router.get("/{uid:int}")
    def get_user(request: veter.Request, uid: int) -> str:
        return "u"

    @router.get("/{uid:int}/files/{rest:path}", name="user_file")
    def file(request: veter.Request, uid: int, rest: str) -> str:
        return "f"

    @app.get("/search/{term}")
    def search(request: veter.Request, term: str) -> str:
        return term

    app.include(router)
    assert app.url_for("get_user", uid=7) == "/users/7"
    assert app.url_for("user_file", uid=1, rest="a b/c.txt") == "/users/1/files/a%20b/c.txt"
    assert app.url_for("search", term="x/y?z") == "/search/x%2Fy%3Fz"
    with TestClient(app) as client:
        assert client.get(app.url_for("search", term="x/y?z")).text == "x/y?z"
    with pytest.raises(ValueError, match="no route is named 'nope'"):
        app.url_for("nope")
    with pytest.raises(ValueError, match="no value for the parameter 'uid'"):
        app.url_for("get_user")
    with pytest.raises(ValueError, match="no parameter named 'extra'"):
        app.url_for("get_user", uid=1, extra=2)
    with pytest.raises(TypeError, match="'uid' is an int parameter"):
        app.url_for("get_user", uid="7")
    with pytest.raises(ValueError, match="may not be empty"):
        app.url_for("search", term="")


def test_url_for_an_ambiguous_name() -> None:
    app = veter.App()

    def handler(request: veter.Request) -> str:
        return ""

    app.add_route("/a", handler)
    app.add_route("/b", handler)
    with pytest.raises(ValueError, match="names several paths"):
        app.url_for("handler")
