"""Typed handlers: query, header, cookie and path parameters, their constraints,
and the 422 that lists every problem."""

from __future__ import annotations

import enum
import re
import uuid
from typing import Annotated, Literal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import veter
from veter.params import Cookie, Header, Path, Query
from veter.testing import TestClient


class Opaque:
    """A type no parameter can be read into."""


class Color(enum.Enum):
    red = "red"
    blue = "blue"


def make_app() -> veter.App:
    app = veter.App()

    @app.get("/search")
    def search(
        q: Annotated[str, Query(min_length=2)],
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
        tags: list[str] = [],  # noqa: B006 - not mutated
        exact: bool = False,
    ) -> dict[str, object]:
        return {"q": q, "limit": limit, "tags": tags, "exact": exact}

    @app.get("/items/{item_id:int}")
    def item(
        request: veter.Request,
        item_id: Annotated[int, Path(ge=1)],
        color: Color = Color.red,
        kind: Literal["a", "b"] = "a",
    ) -> dict[str, object]:
        return {"id": item_id, "color": color.value, "kind": kind, "path": request.path}

    @app.get("/who")
    async def who(
        token: Annotated[str, Header(alias="X-Token")],
        user_agent: Annotated[str | None, Header()] = None,
        session: Annotated[str | None, Cookie()] = None,
    ) -> dict[str, object]:
        return {"token": token, "ua": user_agent, "session": session}

    @app.get("/ids/{uid}")
    def ids(uid: uuid.UUID) -> str:
        return str(uid.version)

    @app.get("/plain/{name}")
    def plain(request: veter.Request, name: str) -> str:
        return name

    return app


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(make_app()) as c:
        yield c  # type: ignore[misc]


def test_query_values_converted_and_defaulted(client: TestClient) -> None:
    r = client.get("/search", params={"q": "veter", "limit": "5", "exact": "true"})
    assert r.json() == {"q": "veter", "limit": 5, "tags": [], "exact": True}
    r = client.get("/search?q=ab&tags=x&tags=y")
    assert r.json() == {"q": "ab", "limit": 10, "tags": ["x", "y"], "exact": False}


def test_every_problem_is_listed(client: TestClient) -> None:
    r = client.get("/search", params={"q": "a", "limit": "500", "exact": "maybe"})
    assert r.status == 422
    detail = r.json()["detail"]
    by_loc = {tuple(p["loc"]): p for p in detail}
    assert set(by_loc) == {("query", "q"), ("query", "limit"), ("query", "exact")}
    assert "length >= 2" in by_loc[("query", "q")]["msg"] and by_loc[("query", "q")]["input"] == "a"
    assert "<= 100" in by_loc[("query", "limit")]["msg"]
    assert by_loc[("query", "exact")]["input"] == "maybe"


def test_missing_required(client: TestClient) -> None:
    r = client.get("/search")
    assert r.status == 422
    assert r.json() == {"detail": [{"type": "missing", "loc": ["query", "q"], "msg": "Field required"}]}


def test_path_constraints_enums_and_literals(client: TestClient) -> None:
    assert client.get("/items/3?color=blue&kind=b").json() == {
        "id": 3,
        "color": "blue",
        "kind": "b",
        "path": "/items/3",
    }
    r = client.get("/items/0?color=green&kind=c")
    assert r.status == 422
    assert {tuple(p["loc"]) for p in r.json()["detail"]} == {
        ("path", "item_id"),
        ("query", "color"),
        ("query", "kind"),
    }


def test_headers_and_cookies_are_not_echoed(client: TestClient) -> None:
    r = client.get("/who", headers={"X-Token": "t0k", "User-Agent": "ua/1", "Cookie": "session=s1"})
    assert r.json() == {"token": "t0k", "ua": "ua/1", "session": "s1"}
    r = client.get("/who")
    assert r.status == 422
    assert r.json()["detail"] == [{"type": "missing", "loc": ["header", "x-token"], "msg": "Field required"}]


def test_path_values_converted_to_their_type(client: TestClient) -> None:
    assert client.get(f"/ids/{uuid.uuid4()}").text == "4"
    r = client.get("/ids/not-a-uuid")
    assert r.status == 422 and r.json()["detail"][0]["loc"] == ["path", "uid"]


def test_plain_handlers_are_not_wrapped() -> None:
    app = make_app()
    plain = next(r for r in app.routes if r.path == "/plain/{name}")
    from veter.typed import typed_route

    assert typed_route(plain, {}) is plain
    with TestClient(app) as client:
        assert client.get("/plain/x").text == "x"


def test_hostile_query_strings_get_4xx(client: TestClient) -> None:
    # Over the start line's limit the core refuses before any handler (414).
    many = "&".join(f"p{i}=x" for i in range(10_000))
    assert client.get(f"/search?q=ok&{many}").status == 414
    few = "&".join("t" for _ in range(3000))
    assert client.get(f"/search?q=ok&{few}").status == 200
    huge = "9" * 5000
    r = client.get(f"/search?q=ok&limit={huge}")
    assert r.status == 422
    assert client.get("/search?q=%ff%fe").status in (200, 400, 422)


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        ("both", "in the route's path and marked Query()"),
        ("unsupported", "must be a scalar"),
        ("path_marker", "marked Path() but the route's path does not name it"),
        ("header_list", "must be a scalar"),
        ("constraint", "cannot"),
    ],
)
def test_signatures_that_cannot_be_served_fail_at_startup(declare: str, message: str) -> None:
    app = veter.App()
    if declare == "both":

        @app.get("/a/{x}")
        def a(x: Annotated[str, Query()]) -> str:
            return x

    elif declare == "unsupported":

        @app.get("/b")
        def b(thing: Opaque) -> str:
            return ""

    elif declare == "path_marker":

        @app.get("/c")
        def c(x: Annotated[int, Path()]) -> str:
            return ""

    elif declare == "header_list":

        @app.get("/d")
        def d(x: Annotated[list[str], Header()]) -> str:
            return ""

    else:

        @app.get("/e")
        def e(x: Annotated[str, Query(ge=1)]) -> str:
            return x

    with pytest.raises(TypeError, match=re.escape(message)):
        app.build_dispatcher()


def test_unannotated_parameters_with_defaults_keep_them() -> None:
    # The idiom that binds a value into a handler stays plain: nothing is read.
    app = veter.App()
    for path, body in {"/a": {"a": [1, 2]}, "/b": "text"}.items():
        app.add_route(path, lambda request, body=body: body)
    from veter.typed import typed_route

    assert all(typed_route(r, {}) is r for r in app.routes)
    with TestClient(app) as client:
        assert client.get("/a?body=x").json() == {"a": [1, 2]}
        assert client.get("/b").text == "text"


def test_constraints_on_an_optional_value() -> None:
    app = veter.App()

    @app.get("/find")
    def find(
        q: Annotated[str | None, Query(min_length=2)] = None,
        n: Annotated[int | None, Query(ge=1)] = None,
    ) -> dict[str, object]:
        return {"q": q, "n": n}

    with TestClient(app) as c:
        assert c.get("/find").json() == {"q": None, "n": None}
        assert c.get("/find?q=ab&n=3").json() == {"q": "ab", "n": 3}
        bad = c.get("/find?q=a&n=0")
        assert bad.status == 422
        assert [p["loc"] for p in bad.json()["detail"]] == [["query", "q"], ["query", "n"]]


def test_a_mutable_default_is_copied_for_each_request() -> None:
    app = veter.App()

    @app.get("/tags")
    def tags(tags: list[str] = ["a"]) -> dict[str, object]:  # noqa: B006 - what is tested
        tags.append("seen")
        return {"tags": tags}

    with TestClient(app) as c:
        assert c.get("/tags").json() == {"tags": ["a", "seen"]}
        assert c.get("/tags").json() == {"tags": ["a", "seen"]}
        assert c.get("/tags?tags=b").json() == {"tags": ["b", "seen"]}


_PICKED = veter.App()


@_PICKED.get("/typed")
def _typed(
    a: str | None = None,
    b: list[str] = [],  # noqa: B006 - not mutated
    spaced: Annotated[str | None, Query(alias="c d")] = None,
    again: Annotated[list[str], Query(alias="a")] = [],  # noqa: B006 - not mutated
) -> dict[str, object]:
    return {"a": a, "b": b, "spaced": spaced, "again": again}


@_PICKED.get("/plain")
def _plain(request: veter.Request) -> dict[str, object]:
    query = request.query
    return {
        "a": query.get("a"),
        "b": query.getall("b"),
        "spaced": query.get("c d"),
        "again": query.getall("a"),
    }


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcd =&+%2B0E9;é", max_size=28))
@example("a=x&a=y&b=1&b=&b=2&c+d=z&c%20d=w&a")
@example("c%2")
def test_typed_query_values_are_the_query_mappings(query: str) -> None:
    # The core picks a typed handler's query values without building request.query:
    # they must be the mapping's (first value, or every value for a list), decoding,
    # repeated keys and two parameters reading one key included.
    from urllib.parse import quote

    raw = b"?" + quote(query, safe="=&+%;").encode("ascii")
    with TestClient(_PICKED) as client:
        typed = client.send_raw(b"GET /typed" + raw + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        plain = client.send_raw(b"GET /plain" + raw + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    assert (typed.status, plain.status) == (200, 200)
    assert typed.json() == plain.json()


def test_values_by_keyword_when_the_signature_is_not_in_their_order() -> None:
    app = veter.App()

    @app.get("/kw/{name}")
    def kw(*, limit: int = 1, name: str) -> str:
        return f"{name}:{limit}"

    @app.get("/mixed/{name}")
    def mixed(limit: int, request: veter.Request, name: str) -> str:
        return f"{name}:{limit}:{request.path}"

    with TestClient(app) as client:
        assert client.get("/kw/x?limit=3").text == "x:3"
        assert client.get("/mixed/y?limit=4").text == "y:4:/mixed/y"
        assert client.get("/mixed/y?limit=no").status == 422
