"""CORS (veter.middleware.cors): preflights, the headers on actual answers, Vary, and
the Fetch standard's rules for '*' and credentials."""

from __future__ import annotations

from typing import Any

import pytest

import veter
from veter.middleware import cors
from veter.testing import TestClient

SITE = "https://app.example"
OTHER = "https://evil.example"


def make_app(**options: Any) -> veter.App:
    app = veter.App()
    app.middleware(cors(**options))

    @app.get("/items")
    def items(request: veter.Request) -> veter.Response:
        return veter.Response("[]", headers={"X-Total": "0", "Vary": "Accept-Encoding"})

    @app.put("/items")
    def put_items(request: veter.Request) -> str:
        return "put"

    return app


def preflight(client: TestClient, origin: str, method: str, headers: str | None = None) -> Any:
    request_headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        request_headers["Access-Control-Request-Headers"] = headers
    return client.request("OPTIONS", "/items", headers=request_headers)


def test_preflight_allowed() -> None:
    app = make_app(allow_origins=[SITE], allow_methods=["PUT"], allow_headers=["X-Token"], max_age=60)
    with TestClient(app) as client:
        r = preflight(client, SITE, "PUT", "x-token, content-type")
    assert r.status == 204
    assert r.headers["access-control-allow-origin"] == SITE
    assert r.headers["access-control-allow-methods"] == "GET, HEAD, POST, PUT"
    assert r.headers["access-control-allow-headers"] == "x-token, content-type"
    assert r.headers["access-control-max-age"] == "60"
    assert r.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in r.headers


@pytest.mark.parametrize(
    ("origin", "method", "headers", "named"),
    [
        (OTHER, "GET", None, "origin 'https://evil.example'"),
        (SITE, "DELETE", None, "method 'DELETE'"),
        (SITE, "GET", "x-secret", "headers 'x-secret'"),
    ],
)
def test_preflight_refused_names_what(origin: str, method: str, headers: str | None, named: str) -> None:
    with TestClient(make_app(allow_origins=[SITE])) as client:
        r = preflight(client, origin, method, headers)
    assert r.status == 400 and named in r.text
    assert "access-control-allow-origin" not in r.headers and r.headers["vary"] == "Origin"


def test_preflight_to_a_path_without_an_options_route_never_reaches_the_router() -> None:
    with TestClient(make_app(allow_origins=[SITE])) as client:
        assert preflight(client, SITE, "GET").status == 204
        # Without Access-Control-Request-Method it is an ordinary OPTIONS request.
        assert client.request("OPTIONS", "/items", headers={"Origin": SITE}).status == 405


def test_actual_request_from_an_allowed_origin() -> None:
    app = make_app(allow_origins=[SITE], expose_headers=["X-Total"], allow_credentials=True)
    with TestClient(app) as client:
        r = client.get("/items", headers={"Origin": SITE})
    assert r.status == 200 and r.text == "[]"
    assert r.headers["access-control-allow-origin"] == SITE
    assert r.headers["access-control-allow-credentials"] == "true"
    assert r.headers["access-control-expose-headers"] == "X-Total"
    assert r.headers["vary"] == "Accept-Encoding, Origin"


def test_actual_request_from_another_origin_is_served_without_cors_headers() -> None:
    with TestClient(make_app(allow_origins=[SITE])) as client:
        r = client.get("/items", headers={"Origin": OTHER})
    assert r.status == 200
    assert "access-control-allow-origin" not in r.headers
    assert r.headers["vary"] == "Accept-Encoding, Origin"


def test_same_origin_requests_without_origin_are_untouched() -> None:
    with TestClient(make_app(allow_origins=[SITE])) as client:
        r = client.get("/items")
    assert "access-control-allow-origin" not in r.headers and r.headers["vary"] == "Accept-Encoding"


def test_any_origin_answers_star_without_vary() -> None:
    with TestClient(make_app(allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])) as client:
        r = client.get("/items", headers={"Origin": OTHER})
        pre = preflight(client, OTHER, "PATCH", "x-anything")
    assert r.headers["access-control-allow-origin"] == "*" and r.headers["vary"] == "Accept-Encoding"
    assert pre.status == 204 and pre.headers["access-control-allow-origin"] == "*"
    # '*' is echoed: Fetch reads it literally for credentialed requests.
    assert pre.headers["access-control-allow-methods"] == "PATCH"
    assert pre.headers["access-control-allow-headers"] == "x-anything"
    assert "vary" not in pre.headers


def test_origin_regex_matches_whole() -> None:
    app = make_app(allow_origin_regex=r"https://[a-z]+\.example\.com")
    with TestClient(app) as client:
        ok = client.get("/items", headers={"Origin": "https://shop.example.com"})
        bad = client.get("/items", headers={"Origin": "https://shop.example.com.evil.net"})
    assert ok.headers["access-control-allow-origin"] == "https://shop.example.com"
    assert "access-control-allow-origin" not in bad.headers


def test_null_origin_only_when_listed() -> None:
    with TestClient(make_app(allow_origins=[SITE])) as client:
        assert "access-control-allow-origin" not in client.get("/items", headers={"Origin": "null"}).headers
    with TestClient(make_app(allow_origins=["null"])) as client:
        assert (
            client.get("/items", headers={"Origin": "null"}).headers["access-control-allow-origin"] == "null"
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"allow_origins": ["*"], "allow_credentials": True}, "every site"),
        ({"expose_headers": ["*"], "allow_credentials": True, "allow_origins": [SITE]}, "not a wildcard"),
        ({"allow_origins": ["https://app.example/"]}, "not an origin"),
        ({"allow_origins": ["app.example"]}, "not an origin"),
        ({"allow_methods": ["GET POST"]}, "not a valid method"),
        ({"allow_headers": ["X Token"]}, "not a valid header"),
        ({"max_age": -1}, "max_age"),
    ],
)
def test_bad_configuration_fails_at_setup(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cors(**options)


def test_a_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError, match="lists of strings"):
        cors(allow_origins=SITE)
