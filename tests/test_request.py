"""The Request object: lazy accessors over the parsed head."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import veter
from veter.testing import TestClient


def echo_app() -> veter.App:
    app = veter.App()

    @app.route("/{rest:path}", methods=["GET", "POST"])
    async def echo(request: veter.Request, rest: str) -> dict[str, Any]:
        return {
            "method": request.method,
            "path": request.path,
            "raw_path": request.raw_path.decode(),
            "target": request.target,
            "query_string": request.query_string,
            "query": request.query.multi_items(),
            "a": request.query.getall("a"),
            "headers": request.headers.multi_items(),
            "x_many": request.headers.getall("X-Many"),
            "cookies": request.cookies,
            "client": list(request.client),
            "version": request.http_version,
            "params": request.path_params,
            "route": request.route,
            "one_header": request.header("x-many"),
            "missing": request.header("nope", "dflt"),
        }

    @app.post("/json")
    async def as_json(request: veter.Request) -> Any:
        return {"got": await request.json()}

    @app.post("/text")
    async def as_text(request: veter.Request) -> str:
        return await request.text()

    return app


def test_fields() -> None:
    client = TestClient(echo_app())
    r = client.get(
        "/a%20b/c?a=1&a=2&b=x%20y&empty=",
        headers=[("X-Many", "1"), ("x-many", "2"), ("Cookie", 'sid=abc; theme="dark"')],
    )
    data = r.json()
    assert data["method"] == "GET"
    assert data["path"] == "/a b/c"
    assert data["raw_path"] == "/a%20b/c"
    assert data["target"] == "/a%20b/c?a=1&a=2&b=x%20y&empty="
    assert data["query_string"] == "a=1&a=2&b=x%20y&empty="
    assert data["query"] == [["a", "1"], ["a", "2"], ["b", "x y"], ["empty", ""]]
    assert data["a"] == ["1", "2"]
    assert data["x_many"] == ["1", "2"]
    assert data["one_header"] == "1"
    assert data["missing"] == "dflt"
    assert ["Host", "testserver"] in data["headers"]
    assert data["cookies"] == {"sid": "abc", "theme": "dark"}
    assert data["client"] == ["127.0.0.1", 50000]
    assert data["version"] == "1.1"
    assert data["params"] == {"rest": "a b/c"}
    assert data["route"] == "/{rest:path}"


def test_json_body() -> None:
    client = TestClient(echo_app())
    assert client.post("/json", json={"x": [1, None]}).json() == {"got": {"x": [1, None]}}


def test_invalid_json_is_400() -> None:
    r = TestClient(echo_app()).post("/json", content=b"{nope")
    assert r.status == 400
    assert "not valid JSON" in r.text


@pytest.mark.parametrize(
    ("content_type", "payload", "expected"),
    [
        (None, "héllo".encode(), "héllo"),
        ("text/plain; charset=latin-1", "héllo".encode("latin-1"), "héllo"),
        ('text/plain; charset="utf-8"', b"ok", "ok"),
    ],
)
def test_text_charset(content_type: str | None, payload: bytes, expected: str) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    r = TestClient(echo_app()).post("/text", content=payload, headers=headers)
    assert r.text == expected


def test_http10_request() -> None:
    client = TestClient(echo_app())
    r = client.send_raw(b"GET /x HTTP/1.0\r\n\r\n")
    assert r.json()["version"] == "1.0"
    assert r.headers["connection"] == "close"


_QUERY_APP = veter.App()


@_QUERY_APP.get("/q")
def _pairs(request: veter.Request) -> list[list[str]]:
    return [list(pair) for pair in request.query.multi_items()]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab=&+%2Fc3E9AZ;é", max_size=24))
def test_query_pairs_are_parse_qsl_of_the_target(query: str) -> None:
    # The core parses the query string itself; the pairs must be what Python's
    # parse_qsl gives for the same target (the latin-1 text of its bytes).
    from urllib.parse import parse_qsl, quote

    raw = quote(query, safe="=&+%;").encode("ascii")  # what a client sends
    with TestClient(_QUERY_APP) as client:
        answer = client.send_raw(b"GET /q?" + raw + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    assert answer.status == 200
    expected = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    assert [tuple(p) for p in answer.json()] == expected
