"""``response.headers`` (veter.response_headers): a case-insensitive mutable view of
a Response's or a StreamingResponse's own header fields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import pytest

import veter
from veter.datastructures import Headers
from veter.testing import TestClient

TEXT = "text/plain; charset=utf-8"


def plain() -> Any:
    return veter.Response("x")


def streamed() -> Any:
    return veter.StreamingResponse([b"x"], content_type=TEXT)


both = pytest.mark.parametrize("make", [plain, streamed], ids=["Response", "StreamingResponse"])
Make = Callable[[], Any]


@both
def test_set_read_and_delete_by_name_in_any_case(make: Make) -> None:
    r = make()
    r.headers["X-Trace"] = "1"
    assert r.headers["x-trace"] == r.headers["X-TRACE"] == r.get_header("X-Trace") == "1"
    assert "x-TRACE" in r.headers and "x-other" not in r.headers and 1 not in r.headers
    assert (
        r.headers.get("x-trace") == "1"
        and r.headers.get("nope") is None
        and r.headers.get("nope", "d") == "d"
    )
    del r.headers["X-TRACE"]
    assert r.get_header("x-trace") is None
    with pytest.raises(KeyError, match="x-trace"):
        r.headers["x-trace"]
    with pytest.raises(KeyError, match="x-trace"):
        del r.headers["x-trace"]


@both
def test_repeated_fields_with_add_and_getall(make: Make) -> None:
    r = make()
    r.headers.add("Set-Cookie", "a=1")
    r.headers.add("set-cookie", "b=2")
    r.add_header("SET-COOKIE", "c=3")
    assert r.headers.getall("Set-Cookie") == ["a=1", "b=2", "c=3"]
    assert r.headers["set-cookie"] == "a=1"
    assert r.headers.getall("missing") == [] and r.headers.getall("missing", ["d"]) == ["d"]
    r.headers["Set-Cookie"] = "only"  # setting a name replaces every field of it
    assert r.headers.getall("set-cookie") == ["only"]


@both
def test_iteration_yields_each_name_once_and_multi_items_every_field(make: Make) -> None:
    r = make()
    r.headers["X-A"] = "1"
    r.headers.add("Vary", "a")
    r.headers.add("vary", "b")
    assert list(r.headers) == ["content-type", "x-a", "vary"]
    assert len(r.headers) == 3
    assert dict(r.headers) == {"content-type": TEXT, "x-a": "1", "vary": "a"}
    assert list(r.headers.items()) == [("content-type", TEXT), ("x-a", "1"), ("vary", "a")]
    assert r.headers.multi_items() == [("Content-Type", TEXT), ("X-A", "1"), ("Vary", "a"), ("vary", "b")]


@both
def test_content_type_is_one_of_the_fields(make: Make) -> None:
    r = make()
    assert r.headers["Content-Type"] == TEXT
    r.headers["content-type"] = "text/html"
    assert r.content_type == "text/html"
    r.headers.add("Content-Type", "application/json")  # one value: adding replaces it
    assert r.headers.getall("content-type") == ["application/json"]
    del r.headers["content-type"]
    assert r.content_type is None and "content-type" not in r.headers and len(r.headers) == 0
    assert r.get_header("content-type", "none") == "none"


@both
def test_a_view_over_the_responses_own_fields_not_a_copy(make: Make) -> None:
    r = make()
    first, second = r.headers, r.headers
    first["X-A"] = "1"
    assert second["x-a"] == "1" and r.get_header("x-a") == "1"
    r.set_header("X-A", "2")
    assert first["X-A"] == "2"
    r.remove_header("x-a")
    assert "x-a" not in second


@both
def test_the_mutable_mapping_methods(make: Make) -> None:
    r = make()
    assert isinstance(r.headers, MutableMapping)
    r.headers.update({"X-A": "1", "X-B": "2"})
    assert r.headers.setdefault("x-a", "other") == "1"
    assert r.headers.setdefault("X-C", "3") == "3"
    assert r.headers.pop("x-b") == "2" and "x-b" not in r.headers
    assert r.headers.pop("x-b", None) is None
    r.headers.clear()
    assert len(r.headers) == 0 and r.content_type is None and r.headers.multi_items() == []


@both
@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x00b", "a\x7fb"])
def test_control_characters_refused(make: Make, value: str) -> None:
    r = make()
    for write in (r.headers.__setitem__, r.headers.add, r.set_header, r.add_header):
        with pytest.raises(ValueError, match="control character"):
            write("X-A", value)
    with pytest.raises(ValueError, match="control character"):
        r.headers["Content-Type"] = value
    assert "x-a" not in r.headers and r.content_type == TEXT


@both
@pytest.mark.parametrize("name", ["", "a b", "a:b", "a\r\nb", "é"])
def test_bad_names_refused(make: Make, name: str) -> None:
    r = make()
    with pytest.raises(ValueError, match="invalid header name"):
        r.headers[name] = "1"
    with pytest.raises(ValueError, match="invalid header name"):
        r.headers.add(name, "1")


@both
@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding", "Connection"])
def test_framing_headers_reserved(make: Make, name: str) -> None:
    r = make()
    with pytest.raises(ValueError, match="set by the server"):
        r.headers[name] = "1"


def only(*pairs: tuple[str, str]) -> Any:
    """A Response with just these fields (no Content-Type)."""
    response = veter.Response(b"x", headers=pairs)
    response.remove_header("content-type")
    return response


def test_equality_ignores_case_and_keeps_the_order_of_a_repeated_name() -> None:
    r = only(("X-A", "1"), ("Vary", "a"), ("Vary", "b"))
    # A dict cannot repeat a name, so it holds fewer fields.
    assert r.headers != {"x-a": "1", "vary": "a"}
    assert r.headers == Headers([("vary", "a"), ("x-a", "1"), ("VARY", "b")])
    assert r.headers != Headers([("vary", "b"), ("x-a", "1"), ("vary", "a")])
    other = veter.StreamingResponse(
        [b"x"], content_type=None, headers=[("vary", "a"), ("VARY", "b"), ("x-a", "1")]
    )
    assert r.headers == other.headers
    single = only(("X-A", "1"))
    assert single.headers == {"x-a": "1"} and single.headers == {"X-A": "1"}
    assert single.headers != {"x-a": "2"} and single.headers != [("X-A", "1")]
    with pytest.raises(TypeError, match="unhashable"):
        hash(single.headers)


def test_repr_shows_every_field() -> None:
    r = only(("Vary", "a"), ("Vary", "b"))
    assert repr(r.headers) == "ResponseHeaders([('Vary', 'a'), ('Vary', 'b')])"


def test_headers_set_through_the_view_go_out() -> None:
    app = veter.App()

    @app.get("/plain")
    def plain_route(request: veter.Request) -> veter.Response:
        response = veter.Response("ok")
        response.headers["X-Trace"] = "1"
        response.headers.add("Set-Cookie", "a=1")
        response.headers.add("Set-Cookie", "b=2")
        response.headers["content-type"] = "text/x-ok"
        return response

    @app.get("/streamed")
    def streamed_route(request: veter.Request) -> veter.StreamingResponse:
        def pieces() -> Iterator[bytes]:
            yield b"ok"

        response = veter.StreamingResponse(pieces(), headers={"X-Gone": "1"})
        response.headers["X-Trace"] = "2"
        response.headers.add("Set-Cookie", "c=3")
        del response.headers["x-gone"]
        return response

    @app.middleware
    async def stamp(request: veter.Request, call_next: Callable[[veter.Request], Any]) -> Any:
        response = await call_next(request)
        response.headers.add("X-Stamp", "mw")
        return response

    with TestClient(app) as client:
        one = client.get("/plain")
        two = client.get("/streamed")
    assert one.text == "ok" and one.headers["x-trace"] == "1" and one.headers["content-type"] == "text/x-ok"
    assert one.headers.getall("set-cookie") == ["a=1", "b=2"] and one.headers["x-stamp"] == "mw"
    assert two.text == "ok" and two.headers["x-trace"] == "2" and two.headers.getall("set-cookie") == ["c=3"]
    assert "x-gone" not in two.headers and two.headers["x-stamp"] == "mw"
