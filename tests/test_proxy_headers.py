"""Proxy headers (src/proxy.rs): believed from trusted proxies only.

The header parsing itself is tested in Rust (byte-level tables in src/proxy.rs);
these tests check what reaches a handler: ``request.client``, ``scheme``, ``host``
and ``url``, for trusted and untrusted peers, with the setting on and off.
"""

from __future__ import annotations

from typing import Any

import pytest

import veter
from veter.config import ServerConfig
from veter.testing import TestClient


def whoami_app() -> veter.App:
    app = veter.App()

    @app.get("/who")
    def who(request: veter.Request) -> dict[str, Any]:
        return {
            "client": list(request.client) if request.client else request.client,
            "scheme": request.scheme,
            "host": request.host,
            "url": request.url,
        }

    return app


def ask(headers: list[tuple[str, str]], *, peer: str | None = "127.0.0.1", **settings: Any) -> dict[str, Any]:
    """What the handler saw; ``peer`` None: the connection came over a Unix socket."""
    config = ServerConfig(access_log=None, **settings)
    client = TestClient(whoami_app(), config=config, client="" if peer is None else (peer, 41000))
    response = client.get("/who", headers=headers)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


FORGED = [
    ("X-Forwarded-For", "203.0.113.7"),
    ("X-Forwarded-Proto", "https"),
    ("X-Forwarded-Host", "shop.example"),
]


def test_off_by_default_even_from_a_trusted_peer() -> None:
    got = ask(FORGED)
    assert got == {
        "client": ["127.0.0.1", 41000],
        "scheme": "http",
        "host": "testserver",
        "url": "http://testserver/who",
    }


def test_trusted_peer_sets_client_scheme_and_host() -> None:
    got = ask(FORGED, proxy_headers=True)
    assert got == {
        "client": ["203.0.113.7", 0],
        "scheme": "https",
        "host": "shop.example",
        "url": "https://shop.example/who",
    }


def test_untrusted_peer_is_ignored() -> None:
    got = ask(FORGED, peer="198.51.100.20", proxy_headers=True)
    assert got["client"] == ["198.51.100.20", 41000]
    assert got["scheme"] == "http"
    assert got["host"] == "testserver"


def test_cidr_and_recursive_trust() -> None:
    headers = [("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.1.0.4")]
    got = ask(headers, peer="10.0.0.2", proxy_headers=True, forwarded_allow_ips="10.0.0.0/8")
    assert got["client"] == ["203.0.113.7", 0]
    # Only the peer trusted: the hop it added is the client, whatever is left of it.
    got = ask(headers, peer="10.0.0.2", proxy_headers=True, forwarded_allow_ips="10.0.0.2")
    assert got["client"] == ["10.1.0.4", 0]


def test_rfc7239_forwarded() -> None:
    headers = [("Forwarded", 'for="[2001:db8::17]:4711";proto=https;host="api.example:8443"')]
    got = ask(headers, proxy_headers=True)
    assert got["client"] == ["2001:db8::17", 4711]
    assert got["url"] == "https://api.example:8443/who"


@pytest.mark.parametrize(
    "value",
    [
        "garbage",
        "unknown",
        "[::1",
        "1.2.3.4.5",
        ",,,,",
        "999.1.1.1",
        "1.2.3.4:99999",
        ", ".join(["10.0.0.1"] * 400),
        "\u00ff\u00fe",
        '"1.2.3.4"',
    ],
)
def test_malformed_values_never_fail(value: str) -> None:
    for name in ("X-Forwarded-For", "Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto"):
        got = ask([(name, value)], proxy_headers=True)
        assert got["client"][0] in ("127.0.0.1", "10.0.0.1")
        assert got["scheme"] == "http"


def test_unix_socket_peer_is_trusted_by_default() -> None:
    got = ask(FORGED, peer=None, proxy_headers=True)
    assert got["client"] == ["203.0.113.7", 0]
    got = ask(FORGED, peer=None, proxy_headers=True, forwarded_allow_ips="127.0.0.1")
    assert got["client"] == ""
    assert got["scheme"] == "http"


def test_bad_trusted_list_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="'localhost' is not an IP address"):
        ServerConfig(forwarded_allow_ips="127.0.0.1, localhost")
    with pytest.raises(ValueError, match="not an IP address"):
        ServerConfig(forwarded_allow_ips="10.0.0.0/33")
    ServerConfig(forwarded_allow_ips="*")
    ServerConfig(forwarded_allow_ips="unix, ::1, fd00::/8, 10.0.0.0/8")
