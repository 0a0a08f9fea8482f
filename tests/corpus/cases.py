"""The request corpus (tests/corpus/cases/<topic>/<name>.json) as Python objects.

The format is described in tests/corpus/README.md. Strings carry one byte per
character (U+0000 to U+00FF), so any byte sequence can be written in JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent / "cases"

#: Rules of the architecture's security section; each must have at least one case.
SECURITY_RULES = {
    "cl-and-te": "Content-Length together with Transfer-Encoding",
    "cl-multiple": "several or differing Content-Length values",
    "te-final-chunked": "any coding other than a final chunked",
    "number-syntax": "numbers with signs, underscores, 0x or spaces",
    "bare-cr": "bare CR in any line",
    "bare-lf": "bare LF in any line",
    "nul": "NUL in any line",
    "ws-before-colon": "whitespace before the colon",
    "obs-fold": "obs-fold",
    "token-method": "invalid token characters in methods",
    "token-field-name": "invalid token characters in header names",
    "chunk-size-overflow": "chunk sizes that overflow",
    "chunk-ext-malformed": "malformed chunk extensions",
    "trailer-malformed": "malformed trailers",
    "limit-start-line": "start line cap (414)",
    "limit-header-count": "header count cap (431)",
    "limit-header-bytes": "header bytes cap (431)",
    "limit-body": "body bytes cap (413)",
    "limit-pipelined": "buffered pipelined requests cap",
    "no-processing-after-reject": "never process a pipelined request that follows a rejected one",
}

#: Topic tags a case may carry besides the security rules.
TOPICS = {
    "request-line",
    "target-form",
    "version",
    "http09",
    "leading-empty-lines",
    "header-syntax",
    "content-length",
    "transfer-encoding",
    "chunked",
    "trailer",
    "host",
    "connection",
    "expect",
    "upgrade",
    "pipeline",
    "limit-chunk-count",
    "limit-chunk-ext",
    "limit-trailer-bytes",
}

LIMITS = {
    "max_start_line",
    "max_header_count",
    "max_header_bytes",
    "max_body_bytes",
    "max_chunk_ext_bytes",
    "max_trailer_bytes",
    "max_chunk_count",
}


def to_bytes(text: str) -> bytes:
    return text.encode("latin-1")


@dataclass(frozen=True)
class Request:
    """One request the server must accept, with what it must make of it."""

    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes
    keep_alive: bool
    expect_continue: bool = False
    upgrade: bool = False


@dataclass(frozen=True)
class Reject:
    """The request is refused with this status and the connection closes."""

    status: int


@dataclass(frozen=True)
class Incomplete:
    """The input ends inside a request: nothing more is answered."""


Outcome = Request | Reject | Incomplete


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    rules: list[str]
    raw: bytes
    expect: list[Outcome]
    limits: dict[str, int] = field(default_factory=dict)
    #: Where h11 differs, the id of the entry in strictness.py that says why.
    h11: str | None = None

    @property
    def accepted(self) -> list[Request]:
        return [o for o in self.expect if isinstance(o, Request)]


def _outcome(item: dict[str, Any]) -> Outcome:
    if "reject" in item:
        return Reject(item["reject"])
    if item.get("incomplete"):
        return Incomplete()
    return Request(
        method=item["method"],
        target=item["target"],
        version=item["version"],
        headers=[(n, v) for n, v in item["headers"]],
        body=to_bytes(item["body"]),
        keep_alive=item["keep_alive"],
        expect_continue=item.get("expect_continue", False),
        upgrade=item.get("upgrade", False),
    )


def _raw(parts: list[str | dict[str, Any]]) -> bytes:
    out = bytearray()
    for part in parts:
        if isinstance(part, str):
            out += to_bytes(part)
        else:
            out += to_bytes(part["repeat"]) * part["times"]
    return bytes(out)


@cache
def load() -> tuple[Case, ...]:
    cases = []
    for path in sorted(CASES_DIR.rglob("*.json")):
        data = json.loads(path.read_text())
        cases.append(
            Case(
                name=str(path.relative_to(CASES_DIR).with_suffix("")),
                title=data["title"],
                rules=data["rules"],
                raw=_raw(data["input"]),
                expect=[_outcome(item) for item in data["expect"]],
                limits=data.get("limits", {}),
                h11=data.get("h11"),
            )
        )
    return tuple(cases)
