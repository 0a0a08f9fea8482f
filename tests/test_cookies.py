"""Set-Cookie headers (veter.cookies): what they hold, and every value a browser
would drop refused with a clear error. The standard library's cookie parser is
the independent reader of what is made."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from http.cookies import SimpleCookie

import pytest

import veter
from veter.cookies import delete_cookie_header, set_cookie_header
from veter.streaming import StreamingResponse
from veter.testing import TestClient


def parsed(header: str) -> SimpleCookie:
    cookie = SimpleCookie()
    cookie.load(header)
    return cookie


def test_defaults_are_path_root_and_lax() -> None:
    assert set_cookie_header("sid", "abc123") == "sid=abc123; Path=/; SameSite=Lax"


def test_every_attribute() -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    header = set_cookie_header(
        "sid",
        "v",
        max_age=3600,
        expires=when,
        path="/app",
        domain="example.com",
        secure=True,
        httponly=True,
        samesite="strict",
        partitioned=True,
    )
    assert header == (
        "sid=v; Max-Age=3600; Expires=Wed, 02 Jan 2030 03:04:05 GMT; Domain=example.com; "
        "Path=/app; Secure; HttpOnly; SameSite=Strict; Partitioned"
    )
    # The standard library's parser knows every attribute but Partitioned.
    morsel = parsed(header.removesuffix("; Partitioned"))["sid"]
    assert morsel.value == "v"
    assert morsel["max-age"] == "3600" and morsel["domain"] == "example.com" and morsel["path"] == "/app"
    assert morsel["secure"] and morsel["httponly"] and morsel["samesite"] == "Strict"


def test_expires_in_seconds_from_now_and_timedelta_max_age() -> None:
    header = set_cookie_header("a", "b", expires=60, max_age=timedelta(minutes=2))
    expires = header.split("Expires=")[1].split(";")[0]
    left = parsedate_to_datetime(expires) - datetime.now(UTC)
    assert timedelta(seconds=55) < left <= timedelta(seconds=60)
    assert "Max-Age=120;" in header


def test_other_time_zones_are_written_in_gmt() -> None:
    plus_two = timezone(timedelta(hours=2))
    header = set_cookie_header("a", "b", expires=datetime(2030, 1, 1, 12, 0, tzinfo=plus_two))
    assert "Expires=Tue, 01 Jan 2030 10:00:00 GMT" in header


def test_none_leaves_path_and_samesite_out() -> None:
    assert set_cookie_header("a", "b", path=None, samesite=None) == "a=b"


def test_quoted_and_empty_values_are_valid() -> None:
    assert set_cookie_header("a", '"xyz"', path=None, samesite=None) == 'a="xyz"'
    assert set_cookie_header("a", path=None, samesite=None) == "a="


def test_delete_expires_now_with_the_same_path_and_domain() -> None:
    header = delete_cookie_header("sid", path="/app", domain="example.com")
    assert header.startswith("sid=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT;")
    assert "Domain=example.com" in header and "Path=/app" in header


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "not a valid cookie name"),
        ("a b", "not a valid cookie name"),
        ("a=b", "not a valid cookie name"),
        ("a;b", "not a valid cookie name"),
        ("caf\u00e9", "not a valid cookie name"),
        ("a\x00", "not a valid cookie name"),
    ],
)
def test_bad_names(key: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        set_cookie_header(key, "v")


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ("a b", " "),
        ("a;b", ";"),
        ("a,b", ","),
        ("a\\b", "\\"),
        ('a"b', '"'),
        ('"ab', '"'),
        ("caf\u00e9", "\u00e9"),
        ("a\r\nSet-Cookie: x=y", "\r"),
        ("\x7f", "\x7f"),
    ],
)
def test_bad_values_name_the_character(value: str, bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{bad!r} is not allowed in a cookie value")):
        set_cookie_header("a", value)


def test_values_that_are_not_str() -> None:
    with pytest.raises(TypeError, match="must be a str"):
        set_cookie_header("a", 1)  # type: ignore[arg-type]


def test_name_and_value_over_4096_bytes() -> None:
    set_cookie_header("k", "v" * 4095)
    with pytest.raises(ValueError, match="over the 4096 browsers keep"):
        set_cookie_header("k", "v" * 4096)


@pytest.mark.parametrize(
    ("attributes", "error", "message"),
    [
        ({"max_age": -1}, ValueError, "max_age must be >= 0"),
        ({"max_age": True}, TypeError, "max_age must be an int"),
        ({"max_age": 1.5}, TypeError, "max_age must be an int"),
        ({"expires": datetime(2030, 1, 1)}, ValueError, "aware datetime"),
        ({"expires": "tomorrow"}, TypeError, "expires must be"),
        ({"path": "app"}, ValueError, "path must start with '/'"),
        ({"path": "/a;b"}, ValueError, "path must start with '/'"),
        ({"path": "/a\nb"}, ValueError, "path must start with '/'"),
        ({"domain": "exa mple.com"}, ValueError, "not a domain name"),
        ({"domain": "a.com; Secure"}, ValueError, "not a domain name"),
        ({"domain": "-a.com"}, ValueError, "not a domain name"),
        ({"samesite": "sometimes"}, ValueError, "samesite must be"),
        ({"samesite": "none"}, ValueError, "SameSite=None needs secure=True"),
        ({"partitioned": True}, ValueError, "Partitioned needs secure=True"),
    ],
)
def test_bad_attributes(attributes: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        set_cookie_header("a", "b", **attributes)  # type: ignore[arg-type]


def test_samesite_is_case_insensitive_and_none_with_secure() -> None:
    assert "SameSite=None" in set_cookie_header("a", "b", samesite="None", secure=True)  # type: ignore[arg-type]
    assert "SameSite=Strict" in set_cookie_header("a", "b", samesite="STRICT")  # type: ignore[arg-type]


def test_leading_dot_domain_and_ip_literal_are_accepted() -> None:
    assert "Domain=.example.com" in set_cookie_header("a", "b", domain=".example.com")
    assert "Domain=127.0.0.1" in set_cookie_header("a", "b", domain="127.0.0.1")


def test_prefixes() -> None:
    assert "Secure" in set_cookie_header("__Secure-id", "1", secure=True)
    assert "Secure" in set_cookie_header("__Host-id", "1", secure=True)
    with pytest.raises(ValueError, match="__Secure- prefix needs secure=True"):
        set_cookie_header("__secure-id", "1")
    with pytest.raises(ValueError, match="__Host- prefix needs"):
        set_cookie_header("__Host-id", "1", secure=True, domain="example.com")
    with pytest.raises(ValueError, match="__Host- prefix needs"):
        set_cookie_header("__Host-id", "1", secure=True, path="/app")


def test_response_methods_add_one_header_each() -> None:
    response = veter.Response("ok")
    response.set_cookie("a", "1", httponly=True)
    response.set_cookie("b", "2", max_age=10)
    response.delete_cookie("c", path="/x")
    cookies = response.headers.getall("set-cookie")
    assert cookies == [
        "a=1; Path=/; HttpOnly; SameSite=Lax",
        "b=2; Max-Age=10; Path=/; SameSite=Lax",
        "c=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/x; SameSite=Lax",
    ]


def test_response_methods_refuse_what_the_function_refuses() -> None:
    response = veter.Response("ok")
    with pytest.raises(ValueError, match="not allowed in a cookie value"):
        response.set_cookie("a", "x;y")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_agee'"):
        response.set_cookie("a", "1", max_agee=1)  # type: ignore[call-arg]
    assert "set-cookie" not in response.headers


def test_streaming_response_has_the_same_methods() -> None:
    response = StreamingResponse([b"x"])
    response.set_cookie("a", "1", secure=True, samesite="none")
    response.delete_cookie("b")
    assert response.headers.getall("set-cookie") == [
        "a=1; Path=/; Secure; SameSite=None",
        "b=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/; SameSite=Lax",
    ]


def test_the_test_client_reads_them() -> None:
    app = veter.App()

    @app.get("/login")
    def login(request: veter.Request) -> veter.Response:
        response = veter.Response("in")
        response.set_cookie("sid", "s3cr3t", httponly=True)
        response.delete_cookie("old")
        return response

    with TestClient(app) as client:
        assert client.get("/login").cookies == {"sid": "s3cr3t", "old": ""}
