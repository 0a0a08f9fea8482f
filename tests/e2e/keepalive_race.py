"""What the keep-alive race costs behind each proxy (docs/deploy.md quotes it).

``python -m tests.e2e.keepalive_race``: veter (the native digest app) with
``--keepalive-timeout 0.1``, and 40 keep-alive clients that each send a 1 KB POST
0 to 10 ms past that timeout after their last answer, for 10 s: sent directly,
through HAProxy as tests/services.py sets it up, and through nginx with keep-alive
upstreams whose ``keepalive_timeout`` (4 s) is above veter's. veter closes an idle
connection at the first tick of its timeouts (every 0.25 s) after the timeout, so
some POSTs find their connection (the client's, or the proxy's to veter) just
closed. A measurement, not a test: how often a proxy loses one depends on timing.
"""

from __future__ import annotations

import random
import socket
import threading
import time

from tests.services import HAProxy, Nginx, Service

from .processes import Proc

KEEPALIVE = 0.1
CLIENTS = 40
SECONDS = 10.0
BODY = b"r" * 1000
REQUEST = b"POST /?i=race HTTP/1.1\r\nHost: race\r\nContent-Length: 1000\r\n\r\n" + BODY


def _post(sock: socket.socket) -> None:
    sock.sendall(REQUEST)
    data = b""
    while not data.endswith(b" len=1000"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data[:60]!r}")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200 "):
        raise ValueError(data[:60])


def at_the_keepalive_timeout(port: int) -> tuple[int, list[str]]:
    """Runs the clients against ``port``; returns how many POSTs were sent after an
    idle wait and the failures (a failed connection is replaced, its POST not resent)."""
    sent: list[int] = []
    failures: list[str] = []

    def client(seed: int) -> None:
        jitter = random.Random(seed)
        end = time.monotonic() + SECONDS
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        _post(sock)
        n = 0
        while time.monotonic() < end:
            # The idle time is what is measured: this wait is the experiment.
            time.sleep(KEEPALIVE + jitter.uniform(0, 0.01))
            n += 1
            try:
                _post(sock)
            except OSError as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
                sock.close()
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                _post(sock)
        sock.close()
        sent.append(n)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SECONDS + 30)
    return sum(sent), failures


def main() -> None:
    app = ["run", "tests.e2e.apps.digest_veter:app", "--port", "0", "--access-log", "off"]
    proc = Proc([*app, "--keepalive-timeout", str(KEEPALIVE)])
    try:
        port = proc.wait_ready()
        sent, failed = at_the_keepalive_timeout(port)
        print(f"direct: {len(failed)} of {sent} failed {sorted(set(failed))[:2]}", flush=True)
        proxies: list[Service] = [HAProxy([port]), Nginx([port])]
        for proxy in proxies:
            try:
                proxy.start()
                sent, failed = at_the_keepalive_timeout(proxy.port)
                print(f"{proxy.name}: {len(failed)} of {sent} failed {sorted(set(failed))[:2]}", flush=True)
            finally:
                proxy.close()
    finally:
        proc.close()


if __name__ == "__main__":
    main()
