"""TLS for ``veter run --ssl-certfile CERT --ssl-keyfile KEY``.

TLS 1.2 and newer, the ``ssl`` module's default ciphers, ALPN advertising
``http/1.1`` only: HTTP/2 is not served by veter; terminate it at a proxy (nginx,
Envoy, a cloud load balancer) that speaks HTTP/1.1 to veter.
"""

from __future__ import annotations

import ssl

from veter.config import ServerConfig

__all__ = ["context_for"]


def context_for(config: ServerConfig) -> ssl.SSLContext | None:
    """The server's TLS context, or None when TLS is off."""
    if config.ssl_certfile is None:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile, password=config.ssl_keyfile_password)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot load the TLS certificate {config.ssl_certfile!r} and key {config.ssl_keyfile!r}: {exc}"
        ) from exc
    # HTTP/2 first when it is on (RFC 9113 3.2: the client picks from our list's order).
    protocols = (["h2"] if config.http2 else []) + (["http/1.1"] if config.http1 else [])
    context.set_alpn_protocols(protocols)
    return context
