"""What the differential fuzzer's instrumented apps share (tests/hosted/fuzz/):
the behaviour a request asks for in its query, the answer's bytes, and the store
of what each app call received.

A request's query says what the app does: ``id`` (``case/index``, echoed in the
``x-probe-id`` answer header and keying the record), ``read`` (``all``, ``part``:
the first ``k`` bytes, ``none``), ``answer`` (``one``: one body message and no
length from the app, ``sized``: a ``content-length`` and ``n`` pieces, ``stream``:
``n`` pieces and no length), ``size`` (the answer's bytes) and ``after`` (ASGI: one
more ``receive()`` once the answer is sent). ``GET /fence`` waits until no other
call is running and answers the records kept since the last fence (JSON), so the
fuzzer sees what the app received even for a request whose client got no answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyz"
# A receive() or wsgi.input read that waits this long is recorded as a hang.
RECEIVE_TIMEOUT = 4.0
FENCE_TIMEOUT = 4.0


@dataclass(frozen=True)
class Behaviour:
    id: str
    read: str
    part: int
    answer: str
    pieces: int
    size: int
    after: bool

    @classmethod
    def parse(cls, query: str) -> Behaviour:
        q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        return cls(
            id=q.get("id", "?"),
            read=q.get("read", "all"),
            part=int(q.get("k", "1")),
            answer=q.get("answer", "one"),
            pieces=max(1, int(q.get("n", "1"))),
            size=int(q.get("size", "0")),
            after=q.get("after") == "1",
        )

    def body(self) -> bytes:
        whole = PATTERN * (self.size // len(PATTERN) + 1)
        return whole[: self.size]

    def split(self) -> list[bytes]:
        """The answer in ``pieces`` parts (empty ones too: the last may be)."""
        body = self.body()
        step = -(-len(body) // self.pieces) if body else 0
        return [body[i * step : (i + 1) * step] for i in range(self.pieces)]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


class Store:
    """The records of finished calls and the ids of running ones (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._records: list[dict[str, Any]] = []
        self._running: dict[int, str] = {}
        self._next = 0

    def start(self, ident: str) -> int:
        with self._lock:
            self._next += 1
            self._running[self._next] = ident
            return self._next

    def finish(self, token: int, record: dict[str, Any]) -> None:
        with self._lock:
            self._running.pop(token, None)
            self._records.append(record)
            self._lock.notify_all()

    def idle(self) -> bool:
        with self._lock:
            return not self._running

    def wait_idle(self, timeout: float) -> None:
        with self._lock:
            self._lock.wait_for(lambda: not self._running, timeout)

    def drain(self) -> bytes:
        """The records since the last drain, and what is still running, as JSON."""
        with self._lock:
            out = {"records": self._records, "running": sorted(self._running.values())}
            self._records = []
            return json.dumps(out).encode()
