"""What the proxy tests' apps answer (tests/e2e/test_proxies.py): the same for a
``veter.App``, a FastAPI app and a Flask app (digest_veter, digest_fastapi,
digest_flask), so one client checks all three.

Every request, GET or POST, is answered 200 with the body ``i=<i> sha256=<hex>
len=<n>``: the request's ``i`` query parameter and the SHA-256 and length of the
body the app received, which the client checks against what it sent. The body has
one length for every request with the same ``i`` and body length, so ApacheBench's
own check (every answer as long as the first) holds too. A request carrying
``X-Body-Sha256`` whose body hashes to something else is answered 400 instead, for
clients that count statuses but cannot read answers (ApacheBench).

The answer's headers say what reached the app, so a test can tell what a proxy
sends upstream: ``X-Seen-Version`` (the request's HTTP version), ``X-Seen-Connection``
and ``X-Seen-Forwarded-For`` (its Connection and X-Forwarded-For headers, ``-`` when
it has none) and ``X-Seen-Peer`` (the port the connection came from: one port for
many requests means the proxy reused it).
"""

from __future__ import annotations

import hashlib


def answer(
    i: str,
    body: bytes,
    expected: str | None,
    version: str,
    connection: str | None,
    forwarded_for: str | None,
    peer: int,
) -> tuple[int, str, dict[str, str]]:
    """The status, body and headers of the answer to a request with ``body``."""
    digest = hashlib.sha256(body).hexdigest()
    status = 400 if expected is not None and expected != digest else 200
    headers = {
        "X-Seen-Version": version,
        "X-Seen-Connection": connection if connection else "-",
        "X-Seen-Forwarded-For": forwarded_for if forwarded_for else "-",
        "X-Seen-Peer": str(peer),
    }
    return status, f"i={i} sha256={digest} len={len(body)}", headers
