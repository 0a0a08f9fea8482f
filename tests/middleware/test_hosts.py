"""Trusted hosts (veter.middleware.trusted_hosts): exact names, wildcard subdomains,
ports, IP literals, a missing Host, and the configuration checks."""

from __future__ import annotations

import pytest

import veter
from veter.middleware import trusted_hosts
from veter.testing import TestClient


def make_app(hosts: list[str], **options: bool) -> veter.App:
    app = veter.App()
    app.middleware(trusted_hosts(hosts, **options))

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "ok"

    return app


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("api.example.com", 200),
        ("API.Example.COM", 200),
        ("api.example.com:8443", 200),
        ("api.example.com.", 200),
        ("a.svc.example.com", 200),
        ("b.a.svc.example.com", 200),
        ("svc.example.com", 400),
        ("evil.com", 400),
        ("api.example.com.evil.com", 400),
        ("xsvc.example.com", 400),
        ("127.0.0.1:8000", 200),
        ("[::1]:8000", 200),
        ("[::2]", 400),
    ],
)
def test_hosts(host: str, status: int) -> None:
    app = make_app(["api.example.com", "*.svc.example.com", "127.0.0.1", "[::1]"])
    with TestClient(app) as client:
        r = client.get("/", headers={"Host": host})
    assert r.status == status
    if status == 400:
        assert r.text == "Invalid host"


def test_star_allows_every_host() -> None:
    with TestClient(make_app(["*"])) as client:
        assert client.get("/", headers={"Host": "anything.test"}).status == 200


def test_a_request_without_host() -> None:
    raw = b"GET / HTTP/1.0\r\n\r\n"
    with TestClient(make_app(["api.example.com"])) as client:
        assert client.send_raw(raw).status == 400
    with TestClient(make_app(["api.example.com"], allow_missing=True)) as client:
        assert client.send_raw(raw).status == 200


@pytest.mark.parametrize("entry", ["https://example.com", "example.com:80", "example.com/x", "a.*.com", ""])
def test_bad_entries_fail_at_setup(entry: str) -> None:
    with pytest.raises(ValueError, match="is not a host name"):
        trusted_hosts([entry])


def test_empty_list_and_plain_string_are_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        trusted_hosts([])
    with pytest.raises(TypeError, match="list of host names"):
        trusted_hosts("example.com")
