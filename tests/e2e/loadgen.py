"""A small closed-loop HTTP load generator for process tests (threads, stdlib only).

It counts failures the way a production client sees them: a request on a reused
keep-alive connection that the server closed before sending any byte is retried
once on a new connection (RFC 9112 section 9.3.1 lets clients retry idempotent
requests then, and every mainstream client does); anything else is a failure.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Stats:
    ok: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    pids: set[str] = field(default_factory=set)
    by_pid: Counter[str] = field(default_factory=Counter)


class Load:
    def __init__(self, port: int, path: str = "/", clients: int = 4, keepalive: bool = True) -> None:
        self.port = port
        self.path = path
        self.keepalive = keepalive
        self.stats = Stats()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._hold = threading.Event()
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def hold(self) -> None:
        """Start no new request from now on; requests already sent still complete."""
        self._hold.set()

    def stop(self) -> Stats:
        self._stop.set()
        for t in self._threads:
            t.join(30)
        return self.stats

    def wait_for(self, count: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while self.stats.ok < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {self.stats.ok} requests succeeded: {self.stats.errors[:3]}")
            time.sleep(0.01)

    def _client(self) -> None:
        conn: http.client.HTTPConnection | None = None
        while not self._stop.is_set():
            if self._hold.is_set():
                self._stop.wait(0.01)
                continue
            reused = conn is not None
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                headers = {} if self.keepalive else {"Connection": "close"}
                conn.request("GET", self.path, headers=headers)
                resp = conn.getresponse()
                body = resp.read().decode()
                with self._lock:
                    if resp.status == 200:
                        self.stats.ok += 1
                        pid = body.rsplit("pid=", 1)[-1]
                        self.stats.pids.add(pid)
                        self.stats.by_pid[pid] += 1
                    else:
                        self.stats.failed += 1
                        self.stats.errors.append(f"status {resp.status}")
                if not self.keepalive or resp.will_close:
                    conn.close()
                    conn = None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                conn = None
                if reused:
                    continue  # stale keep-alive connection: retry on a new one
                with self._lock:
                    self.stats.failed += 1
                    self.stats.errors.append(repr(exc))
            except OSError as exc:
                if conn is not None:
                    conn.close()
                conn = None
                with self._lock:
                    self.stats.failed += 1
                    self.stats.errors.append(repr(exc))
        if conn is not None:
            conn.close()
