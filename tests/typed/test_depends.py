"""Dependencies (Depends): sync and async, generators cleaned up after the handler,
one call per request, nested, their parameters validated with the handler's, and
overridden on the app in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated

import pytest

import veter
from veter.params import Depends, Header, Query
from veter.testing import TestClient

EVENTS: list[str] = []


class Conn:
    def __init__(self, name: str) -> None:
        self.name = name


async def get_conn() -> AsyncIterator[Conn]:
    EVENTS.append("open")
    try:
        yield Conn("real")
    except RuntimeError:
        EVENTS.append("saw error")
        raise
    finally:
        EVENTS.append("close")


def settings() -> Iterator[dict[str, int]]:
    EVENTS.append("settings")
    yield {"page": 20}
    EVENTS.append("settings done")


async def current_user(
    token: Annotated[str, Header(alias="X-Token")],
    conn: Annotated[Conn, Depends(get_conn)],
) -> str:
    if token != "good":
        raise veter.HTTPException(401, "bad token")
    return f"ann via {conn.name}"


def pager(page: Annotated[int, Query(ge=1)] = 1, conf: dict[str, int] = Depends(settings)) -> dict[str, int]:
    return {"page": page, "size": conf["page"]}


def make_app() -> veter.App:
    app = veter.App()

    @app.get("/me")
    async def me(
        user: Annotated[str, Depends(current_user)],
        conn: Annotated[Conn, Depends(get_conn)],
        paging: Annotated[dict[str, int], Depends(pager)],
    ) -> dict[str, object]:
        EVENTS.append("handler")
        return {"user": user, "same": conn.name, "paging": paging}

    @app.get("/boom")
    def boom(conn: Annotated[Conn, Depends(get_conn)]) -> str:
        raise RuntimeError("boom")

    @app.get("/uncached")
    def uncached(
        a: Annotated[Conn, Depends(get_conn, use_cache=False)],
        b: Annotated[Conn, Depends(get_conn, use_cache=False)],
    ) -> str:
        return str(a is b)

    return app


@pytest.fixture(autouse=True)
def _clear() -> None:
    EVENTS.clear()


def test_resolved_once_cleaned_up_in_reverse_order() -> None:
    with TestClient(make_app()) as client:
        r = client.get("/me?page=3", headers={"X-Token": "good"})
    assert r.json() == {"user": "ann via real", "same": "real", "paging": {"page": 3, "size": 20}}
    assert EVENTS == ["open", "settings", "handler", "settings done", "close"]


def test_problems_of_every_dependency_are_listed_and_none_runs() -> None:
    with TestClient(make_app()) as client:
        r = client.get("/me?page=0")
    assert r.status == 422
    assert {tuple(p["loc"]) for p in r.json()["detail"]} == {("header", "x-token"), ("query", "page")}
    assert EVENTS == []


def test_a_dependency_may_refuse_and_still_cleans_up() -> None:
    with TestClient(make_app()) as client:
        r = client.get("/me", headers={"X-Token": "bad"})
    assert (r.status, r.text) == (401, "bad token")
    assert EVENTS == ["open", "close"]


def test_the_handlers_error_is_thrown_into_generators() -> None:
    with TestClient(make_app()) as client:
        assert client.get("/boom").status == 500
    assert EVENTS == ["open", "saw error", "close"]


def test_use_cache_false_calls_again() -> None:
    with TestClient(make_app()) as client:
        assert client.get("/uncached").text == "False"
    assert EVENTS.count("open") == 2


def test_overrides_replace_a_dependency_in_tests() -> None:
    app = make_app()

    def fake_conn() -> Conn:
        return Conn("fake")

    with TestClient(app) as client:
        app.dependency_overrides[get_conn] = fake_conn
        r = client.get("/me", headers={"X-Token": "good"})
        assert r.json()["user"] == "ann via fake" and r.json()["same"] == "fake"
        app.dependency_overrides.clear()
        assert client.get("/me", headers={"X-Token": "good"}).json()["same"] == "real"


def needs_opaque(x: Annotated[object, Query()]) -> int:
    return 1


def test_a_bad_dependency_fails_at_startup() -> None:
    app = veter.App()
    app.add_route("/x", bad_dependency_user)
    with pytest.raises(TypeError, match=r"dependency 'v'.*must be a scalar"):
        app.build_dispatcher()


def bad_dependency_user(v: Annotated[int, Depends(needs_opaque)]) -> str:
    return ""


def test_unresolvable_annotations_are_a_clear_error() -> None:
    app = veter.App()

    class Local:
        pass

    @app.get("/y")
    def y(v: Annotated[Local, Depends(needs_opaque)]) -> str:
        return ""

    with pytest.raises(TypeError, match="cannot resolve the handler's annotations"):
        app.build_dispatcher()
