"""Seeded random cases: a connection's requests, their bytes, and how they are
delivered. ``generate(seed)`` always gives the same cases for the same seed."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

# Body sizes: none, small, across a 64 KiB read boundary, and above the 1 MiB
# pause watermark of a streamed body (src/body_stream.rs HIGH).
BODY_SIZES = ((0, 3), (11, 3), (1000, 2), (70_000, 2), (1_200_000, 1))
ANSWER_SIZES = ((0, 2), (13, 4), (70_000, 2), (1_100_000, 1))

# Malformed framing the generator can put into a request. Each names what makes
# it malformed; rules.py says how each server may answer it.
MALFORMED = (
    "chunk-no-crlf",  # chunk data followed by something other than CRLF
    "chunk-bad-size",  # a chunk size that is not hex
    "chunk-size-ws",  # "5 " : whitespace after the size (veter: chunk-ext-syntax)
    "chunk-bare-lf",  # a chunk-size line ended by LF alone (veter: bare-lf)
    "chunk-overflow",  # a chunk size over 64 bits (veter: chunk-size-overflow)
    "trailer-cl",  # a Content-Length trailer field (veter: trailer-fields)
    "cl-and-te",  # both Content-Length and Transfer-Encoding: chunked
    "cl-repeated",  # two equal Content-Length lines
    "cl-sign",  # Content-Length: +N
    "te-http10",  # Transfer-Encoding: chunked in an HTTP/1.0 request
    "body-short",  # fewer body bytes than declared, then the client half-closes
    "chunk-truncated",  # no last chunk, then the client half-closes
)
# These leave the body incomplete: the case must half-close to end it.
TRUNCATING = {"body-short", "chunk-truncated"}


@dataclass
class Request:
    version: str  # "1.0" or "1.1"
    method: str
    framing: str  # "none", "length" or "chunked"
    size: int
    keep_alive: bool
    expect: bool
    read: str  # "all", "part" or "none"
    part: int
    answer: str  # "one", "sized" or "stream"
    pieces: int
    answer_size: int
    after: bool
    malformed: str | None = None

    def target(self, ident: str) -> str:
        return (
            f"/p/{ident}?id={ident}&read={self.read}&k={self.part}&answer={self.answer}"
            f"&n={self.pieces}&size={self.answer_size}&after={int(self.after)}"
        )


@dataclass
class Case:
    seed: int
    index: int
    requests: list[Request]
    delivery: str  # "whole", "splits" or "bytewise"
    half_close: bool
    cuts: list[int] = field(default_factory=list)  # for "splits"

    @property
    def name(self) -> str:
        return f"{self.seed}-{self.index}"

    def ident(self, i: int) -> str:
        return f"{self.name}.{i}"

    def payload(self) -> bytes:
        return b"".join(encode(r, self.ident(i)) for i, r in enumerate(self.requests))

    def describe(self) -> str:
        parts = [f"case {self.name}: {self.delivery}{', half-close' if self.half_close else ''}"]
        for i, r in enumerate(self.requests):
            parts.append(
                f"  [{i}] HTTP/{r.version} {r.method} {r.framing} {r.size}B"
                f"{' expect' if r.expect else ''} {'keep-alive' if r.keep_alive else 'close'}"
                f" read={r.read} answer={r.answer}x{r.pieces} {r.answer_size}B"
                f"{' malformed=' + r.malformed if r.malformed else ''}"
            )
        return "\n".join(parts)


def body_bytes(size: int) -> bytes:
    unit = bytes(range(33, 127))
    return (unit * (size // len(unit) + 1))[:size]


def _chunks(body: bytes, rng_cut: int, malformed: str | None) -> bytes:
    """``body`` in chunked coding (two chunks when it is long enough)."""
    pieces = [body[:rng_cut], body[rng_cut:]] if 0 < rng_cut < len(body) else [body]
    out = b""
    for n, piece in enumerate(p for p in pieces if p):
        size = f"{len(piece):x}".encode()
        line_end = b"\r\n"
        data_end = b"\r\n"
        if n == 0 and malformed == "chunk-size-ws":
            size += b" "
        if n == 0 and malformed == "chunk-bare-lf":
            line_end = b"\n"
        if n == 0 and malformed == "chunk-no-crlf":
            data_end = b"XY"
        if n == 0 and malformed == "chunk-bad-size":
            size = b"zz"
        if n == 0 and malformed == "chunk-overflow":
            size = b"1" + b"0" * 20
        out += size + line_end + piece + data_end
    if malformed == "chunk-truncated":
        return out
    if malformed == "trailer-cl":
        return out + b"0\r\nContent-Length: 5\r\n\r\n"
    return out + b"0\r\n\r\n"


def encode(r: Request, ident: str) -> bytes:
    lines = [f"{r.method} {r.target(ident)} HTTP/{r.version}".encode(), b"Host: fuzz"]
    body = body_bytes(r.size)
    payload = b""
    m = r.malformed
    if r.framing == "length":
        declared = len(body) + (7 if m == "body-short" else 0)
        lines.append(f"Content-Length: {'+' if m == 'cl-sign' else ''}{declared}".encode())
        if m == "cl-repeated":
            lines.append(f"Content-Length: {declared}".encode())
        payload = body
    elif r.framing == "chunked":
        lines.append(b"Transfer-Encoding: chunked")
        if m == "cl-and-te":
            lines.append(f"Content-Length: {len(body)}".encode())
        payload = _chunks(body, len(body) // 3, m)
    if r.expect:
        lines.append(b"Expect: 100-continue")
    if r.version == "1.0" and r.keep_alive:
        lines.append(b"Connection: keep-alive")
    elif r.version == "1.1" and not r.keep_alive:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + payload


def _weighted(rng: random.Random, table: tuple[tuple[int, int], ...]) -> int:
    values = [v for v, _ in table]
    weights = [w for _, w in table]
    return rng.choices(values, weights)[0]


def _request(rng: random.Random, last: bool) -> Request:
    version = rng.choice(["1.1", "1.1", "1.0"])
    framing = rng.choice(["none", "length", "length", "chunked"])
    if version == "1.0" and framing == "chunked":
        framing = "length"
    size = 0 if framing == "none" else _weighted(rng, BODY_SIZES)
    method = rng.choice(["GET", "HEAD"]) if framing == "none" else rng.choice(["POST", "PUT"])
    return Request(
        version=version,
        method=method,
        framing=framing,
        size=size,
        keep_alive=not last or rng.random() < 0.5,
        expect=framing != "none" and version == "1.1" and rng.random() < 0.25,
        read=rng.choice(["all", "all", "part", "none"]),
        part=rng.choice([1, 10, 5000]),
        answer=rng.choice(["one", "sized", "stream"]),
        pieces=rng.randint(1, 4),
        answer_size=_weighted(rng, ANSWER_SIZES),
        after=rng.random() < 0.3,
    )


def _malform(rng: random.Random, requests: list[Request], index: int) -> None:
    kind = rng.choice(MALFORMED)
    # A short body followed by another request would take that request's bytes.
    r = requests[-1] if kind in TRUNCATING else requests[index]
    if kind == "te-http10":
        r.version, r.framing, r.expect = "1.0", "chunked", False
    elif kind.startswith(("chunk", "trailer")) or kind == "cl-and-te":
        r.version, r.framing = "1.1", "chunked"
    else:
        r.framing = "length"
    if r.method in ("GET", "HEAD"):
        r.method = "POST"
    r.size = max(r.size, 11)
    r.malformed = kind


def generate(seed: int) -> Iterator[Case]:
    """Endless cases for ``seed``: 1-3 requests per connection (pipelined)."""
    rng = random.Random(seed)
    index = 0
    while True:
        count = rng.choice([1, 1, 1, 2, 3])
        requests = [_request(rng, i == count - 1) for i in range(count)]
        if rng.random() < 0.2:
            _malform(rng, requests, rng.randrange(count))
        half_close = rng.random() < 0.2 or any(r.malformed in TRUNCATING for r in requests)
        delivery = rng.choice(["whole", "whole", "splits", "bytewise"])
        case = Case(seed, index, requests, delivery, half_close)
        total = len(case.payload())
        case.cuts = (
            sorted(rng.sample(range(1, total), min(total - 1, rng.randint(1, 6)))) if total > 1 else []
        )
        yield case
        index += 1
