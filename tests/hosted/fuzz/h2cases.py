"""Seeded random HTTP/2 cases (h2c with prior knowledge): a connection's streams,
interleaved, and the frames that carry them. ``generate_h2(seed)`` always gives the
same cases, and a case always the same frames.

Frames are made with the ``h2`` package (HEADERS with and without priority, DATA
with padding, trailers, PRIORITY, WINDOW_UPDATE, RST_STREAM, PING), its outbound
header checks turned off for the malformed requests; a header block split into
CONTINUATION frames is built by hand (``h2`` splits only blocks over the frame
size), encoded by the same HPACK encoder so the dynamic table stays in step, and
that stream's later frames are hand-built too (``h2`` does not know the stream).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.settings
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    HeadersFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

from tests.hosted.fuzz.cases import ANSWER_SIZES, BODY_SIZES, body_bytes

MAX_FRAME = 16_384  # SETTINGS_MAX_FRAME_SIZE of both servers (the default)
BIG_WINDOW = 2**31 - 1  # the largest window (RFC 9113 6.9.1); a case's WINDOW_UPDATEs stay below it

# Malformed requests (RFC 9113 8.1.1: a stream error of type PROTOCOL_ERROR; 5.4.2:
# a server may make it a connection error). The generator puts one, at most, last
# in a case, after a barrier (every stream before it done), so a server that ends
# the connection for it still answers the others.
MALFORMED_H2 = (
    "uppercase-name",  # a field name with an upper-case letter (8.2.1)
    "connection-header",  # connection: keep-alive (8.2.2)
    "transfer-encoding",  # transfer-encoding: chunked (8.2.2)
    "te-not-trailers",  # te: gzip (8.2.2)
    "value-whitespace",  # a field value with a leading space (8.2.1)
    "cl-more",  # content-length below the DATA sent (8.1.1)
    "cl-less",  # content-length above the DATA sent, then END_STREAM (8.1.1)
    "cl-not-number",  # content-length: 1x
    "no-method",  # a required pseudo-header missing (8.3.1)
    "no-path",
    "no-scheme",
    "pseudo-after-regular",  # a pseudo-header after a regular field (8.3)
    "unknown-pseudo",  # :foo (8.3)
    "empty-path",  # :path "" (8.3.1)
    "duplicate-path",  # :path twice (8.3)
)
# Malformed in the body: the app is called (the head is fine) and sees no end.
BODY_MALFORMED = {"cl-more", "cl-less"}

EXTRA_HEADERS = (
    ("accept", "*/*"),
    ("user-agent", "fuzz/1"),
    ("x-fuzz", "a b"),
    ("x-empty", ""),
    ("te", "trailers"),
    ("cookie", "a=1"),
    ("cookie", "b=2"),
    ("x-dup", "1"),
    ("x-dup", "2"),
    ("content-type", "application/octet-stream"),
)
PATH_SUFFIXES = ("", "", "", "/x%41y", "/%E2%82%AC", "/a%2Fb")


@dataclass
class H2Request:
    method: str
    size: int  # body bytes (0: none)
    with_length: bool  # a content-length field
    read: str  # what the app does: "all", "part" or "none" of the body
    part: int
    answer: str  # "one", "sized" or "stream"
    pieces: int
    answer_size: int
    after: bool
    extra: list[tuple[str, str]]
    suffix: str  # percent-encoded path bytes after /p/<id>
    frame_sizes: list[int]  # the DATA frames' payloads (sum: size)
    pads: list[int | None]  # each DATA frame's padding (None: no PADDED flag)
    empty_end: bool  # END_STREAM on an empty DATA frame (not on the last one)
    trailers: bool
    continuation: int  # header block fragments (1: no CONTINUATION)
    priority: tuple[int, int, bool] | None  # HEADERS priority: (weight, depends on stream #, exclusive)
    host_only: bool  # host field and no :authority
    reset_after: int | None = None  # the client sends RST_STREAM(CANCEL) after this many DATA frames
    malformed: str | None = None

    def target(self, ident: str) -> str:
        return (
            f"/p/{ident}{self.suffix}?id={ident}&read={self.read}&k={self.part}&answer={self.answer}"
            f"&n={self.pieces}&size={self.answer_size}&after={int(self.after)}"
        )

    def declared_length(self) -> str | None:
        if self.malformed == "cl-more":
            return str(max(0, self.size - 5))
        if self.malformed == "cl-less":
            return str(self.size + 7)
        if self.malformed == "cl-not-number":
            return "1x"
        return str(self.size) if self.with_length else None

    def headers(self, ident: str) -> list[tuple[str, str]]:
        m = self.malformed
        pseudo = [(":method", self.method), (":scheme", "http"), (":path", self.target(ident))]
        if not self.host_only:
            pseudo.insert(2, (":authority", "fuzz"))
        if m == "no-method":
            pseudo = [p for p in pseudo if p[0] != ":method"]
        if m == "no-path":
            pseudo = [p for p in pseudo if p[0] != ":path"]
        if m == "no-scheme":
            pseudo = [p for p in pseudo if p[0] != ":scheme"]
        if m == "empty-path":
            pseudo = [(n, "" if n == ":path" else v) for n, v in pseudo]
        if m == "duplicate-path":
            pseudo.append((":path", "/other"))
        if m == "unknown-pseudo":
            pseudo.append((":foo", "bar"))
        regular = [("host", "fuzz")] if self.host_only else []
        regular += self.extra
        length = self.declared_length()
        if length is not None:
            regular.append(("content-length", length))
        bad = {
            "uppercase-name": ("X-Upper", "1"),
            "connection-header": ("connection", "keep-alive"),
            "transfer-encoding": ("transfer-encoding", "chunked"),
            "te-not-trailers": ("te", "gzip"),
            "value-whitespace": ("x-space", " padded"),
        }
        if m in bad:
            regular.append(bad[m])
        if m == "pseudo-after-regular":
            return [*pseudo[:-1], ("x-before", "1"), pseudo[-1], *regular]
        return pseudo + regular


@dataclass(frozen=True)
class Frame:
    """One frame of the case's byte stream, and what the writer needs to know of it."""

    data: bytes
    kind: str  # "preface", "headers", "data", "trailers", "rst", "priority", "window", "ping", "barrier"
    index: int | None = None  # the request (stream) it belongs to
    flow: int = 0  # flow-controlled bytes (DATA: payload and padding)


@dataclass
class H2Case:
    seed: int
    index: int
    requests: list[H2Request]
    order: list[tuple[str, int]]  # the plan: (step, request #); see _plan
    delivery: str  # "whole", "splits" or "bytewise"
    initial_window: int  # the client's SETTINGS_INITIAL_WINDOW_SIZE
    connection_increment: int  # a connection WINDOW_UPDATE at the start (0: none)
    cuts: list[int] = field(default_factory=list)  # for "splits"
    _frames: list[Frame] | None = None

    @property
    def name(self) -> str:
        return f"h2-{self.seed}-{self.index}"

    def ident(self, i: int) -> str:
        return f"{self.name}.{i}"

    def stream_id(self, i: int) -> int:
        """Streams are numbered in the order their HEADERS go out."""
        opened = [r for step, r in self.order if step == "headers"]
        return 1 + 2 * opened.index(i)

    def frames(self) -> list[Frame]:
        if self._frames is None:
            self._frames = _render(self)
        return self._frames

    def payload(self) -> bytes:
        return b"".join(f.data for f in self.frames())

    def describe(self) -> str:
        parts = [
            f"case {self.name}: {self.delivery}, client window {self.initial_window}"
            f"{f', connection +{self.connection_increment}' if self.connection_increment else ''}"
        ]
        for i, r in enumerate(self.requests):
            parts.append(
                f"  [{i}] stream {self.stream_id(i)} {r.method} {r.size}B"
                f"{' content-length' if r.with_length else ''} frames={len(r.frame_sizes)}"
                f"{' padded' if any(p is not None for p in r.pads) else ''}"
                f"{' empty-end' if r.empty_end else ''}{' trailers' if r.trailers else ''}"
                f"{f' continuation={r.continuation}' if r.continuation > 1 else ''}"
                f"{f' priority={r.priority}' if r.priority else ''}{' host-only' if r.host_only else ''}"
                f"{f' reset-after={r.reset_after}' if r.reset_after is not None else ''}"
                f" read={r.read} answer={r.answer}x{r.pieces} {r.answer_size}B"
                f"{' after' if r.after else ''}{' malformed=' + r.malformed if r.malformed else ''}"
                f" extra={r.extra}{' path' + r.suffix if r.suffix else ''}"
            )
        parts.append("  plan: " + " ".join(f"{step}[{i}]" if i >= 0 else step for step, i in self.order))
        return "\n".join(parts)


def _split(rng: random.Random, size: int, small: bool) -> list[int]:
    if size == 0:
        return []
    top = 100 if small else MAX_FRAME - 256
    sizes = []
    left = size
    while left:
        n = min(left, rng.randint(1, top) if rng.random() < 0.7 else top)
        sizes.append(n)
        left -= n
    return sizes


def _request(rng: random.Random) -> H2Request:
    has_body = rng.random() < 0.6
    size = rng.choices([v for v, _ in BODY_SIZES], [w for _, w in BODY_SIZES])[0] if has_body else 0
    frame_sizes = _split(rng, size, small=size <= 1000 and rng.random() < 0.5)
    extra = sorted(rng.sample(range(len(EXTRA_HEADERS)), rng.randint(0, 4)))
    return H2Request(
        method=rng.choice(["POST", "PUT"]) if has_body else rng.choice(["GET", "GET", "HEAD", "POST"]),
        size=size,
        with_length=rng.random() < 0.5 if has_body else rng.random() < 0.2,
        read=rng.choice(["all", "all", "part", "none"]),
        part=rng.choice([1, 10, 5000]),
        answer=rng.choice(["one", "sized", "stream"]),
        pieces=rng.randint(1, 4),
        answer_size=rng.choices([v for v, _ in ANSWER_SIZES], [w for _, w in ANSWER_SIZES])[0],
        after=rng.random() < 0.2,
        extra=[EXTRA_HEADERS[k] for k in extra],
        suffix=rng.choice(PATH_SUFFIXES),
        frame_sizes=frame_sizes,
        pads=[rng.randint(0, 255) if rng.random() < 0.2 else None for _ in frame_sizes],
        empty_end=rng.random() < 0.2,
        trailers=has_body and rng.random() < 0.15,
        continuation=rng.choice([1, 1, 1, 1, 2, 3, 5]),
        priority=None,
        host_only=rng.random() < 0.1,
    )


def _plan(rng: random.Random, requests: list[H2Request]) -> list[tuple[str, int]]:
    """The steps in order: each request's "headers", "data" (one per DATA frame),
    "end" (an empty END_STREAM DATA) or "trailers", or "rst"; interleaved at random,
    with "priority", "window" and "ping" steps between (their number: what the
    step is about, -1 for the connection), and a "barrier" before a malformed
    request (the writer waits for every stream before it to be done)."""
    queues: list[list[tuple[str, int]]] = []
    malformed: list[tuple[str, int]] = []
    for i, r in enumerate(requests):
        steps = [("headers", i)]
        frames = len(r.frame_sizes)
        if r.reset_after is not None:
            steps += [("data", i)] * r.reset_after + [("rst", i)]
        else:
            steps += [("data", i)] * frames
            if r.trailers:
                steps.append(("trailers", i))
            elif r.empty_end:
                steps.append(("end", i))
        if r.malformed:
            malformed = steps
        else:
            queues.append(steps)
    order: list[tuple[str, int]] = []
    opened: list[int] = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        step = q.pop(0)
        if step[0] == "headers":
            opened.append(step[1])
        order.append(step)
        roll = rng.random()
        if roll < 0.06:
            order.append(("priority", rng.choice([*opened, len(requests)])))
        elif roll < 0.12:
            order.append(("window", rng.choice([*opened, -1])))
        elif roll < 0.14:
            order.append(("ping", -1))
    if malformed:
        order.append(("barrier", -1))
        order += malformed
    return order


def _malform(rng: random.Random, requests: list[H2Request]) -> None:
    r = requests[-1]
    kind = rng.choice(MALFORMED_H2)
    r.malformed = kind
    r.reset_after = None
    if kind in BODY_MALFORMED:
        r.method = "POST"
        if r.size < 11:
            r.size = 11
            r.frame_sizes = [11]
            r.pads = [None]
        r.trailers = False


def generate_h2(seed: int) -> Iterator[H2Case]:
    """Endless cases for ``seed``: 1-5 streams on one connection."""
    rng = random.Random(seed)
    index = 0
    while True:
        count = rng.choice([1, 2, 2, 3, 3, 4, 5])
        requests = [_request(rng) for _ in range(count)]
        for i, r in enumerate(requests):
            if i and rng.random() < 0.2:
                r.priority = (rng.randint(1, 256), rng.randrange(i), rng.random() < 0.3)
            if len(r.frame_sizes) >= 2 and rng.random() < 0.1:
                r.reset_after = rng.randrange(1, len(r.frame_sizes))
                r.trailers = r.empty_end = False
        if rng.random() < 0.2:
            _malform(rng, requests)
        case = H2Case(
            seed=seed,
            index=index,
            requests=requests,
            order=_plan(rng, requests),
            delivery=rng.choice(["whole", "whole", "splits", "bytewise"]),
            initial_window=rng.choice([65_535, 65_535, 16_384, 1 << 20, 1 << 30]),
            connection_increment=rng.choice([0, 0, 1 << 20, 1 << 30]),
        )
        total = len(case.payload())
        case.cuts = sorted(rng.sample(range(1, total), min(total - 1, rng.randint(1, 8))))
        yield case
        index += 1


def _render(case: H2Case) -> list[Frame]:
    """The case's frames, in the plan's order."""
    config = h2.config.H2Configuration(
        client_side=True,
        header_encoding="utf-8",
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
    )
    conn = h2.connection.H2Connection(config)
    conn.local_settings = h2.settings.Settings(
        client=True,
        initial_values={
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: case.initial_window,
        },
    )
    conn.initiate_connection()
    # A server as generous as they come, so that h2 never holds DATA back: the real
    # windows are the writer's business (wire.py waits for them).
    generous = SettingsFrame(0, settings={SettingsFrame.INITIAL_WINDOW_SIZE: BIG_WINDOW})
    conn.receive_data(generous.serialize() + WindowUpdateFrame(0, BIG_WINDOW - 65_535).serialize())
    frames = [Frame(conn.data_to_send(), "preface")]  # the preface, SETTINGS, the ACK of the server's
    if case.connection_increment:
        conn.increment_flow_control_window(case.connection_increment)
        frames.append(Frame(conn.data_to_send(), "window"))
    by_hand = {i for i, r in enumerate(case.requests) if r.continuation > 1}
    sent = [0] * len(case.requests)  # DATA frames sent per request
    for step, i in case.order:
        if step == "barrier":
            frames.append(Frame(b"", "barrier"))
            continue
        if step in ("priority", "window", "ping"):
            frames.append(Frame(_control(case, conn, step, i), step, i if i >= 0 else None))
            continue
        r = case.requests[i]
        sid = case.stream_id(i)
        if step == "headers":
            end = not r.frame_sizes and not r.trailers and not r.empty_end and r.reset_after is None
            headers = r.headers(case.ident(i))
            prio = r.priority
            if i in by_hand:
                data = _by_hand_headers(conn, sid, headers, end, r.continuation, prio and _prio(case, prio))
            else:
                kwargs = {}
                if prio:
                    weight, dep, excl = _prio(case, prio)
                    kwargs = {
                        "priority_weight": weight,
                        "priority_depends_on": dep,
                        "priority_exclusive": excl,
                    }
                conn.send_headers(sid, headers, end_stream=end, **kwargs)  # type: ignore[arg-type]
                data = conn.data_to_send()
            frames.append(Frame(data, "headers", i))
        elif step == "data":
            n = sent[i]
            sent[i] += 1
            start = sum(r.frame_sizes[:n])
            chunk = body_bytes(r.size)[start : start + r.frame_sizes[n]]
            last = (
                n == len(r.frame_sizes) - 1 and not r.trailers and not r.empty_end and r.reset_after is None
            )
            pad = r.pads[n]
            if i in by_hand:
                frame = DataFrame(sid, chunk, flags={"END_STREAM"} if last else set())
                if pad is not None:
                    frame.flags.add("PADDED")
                    frame.pad_length = pad
                data = frame.serialize()
            else:
                conn.send_data(sid, chunk, end_stream=last, pad_length=pad)
                data = conn.data_to_send()
            frames.append(Frame(data, "data", i, len(chunk) + (pad + 1 if pad is not None else 0)))
        elif step == "end":
            if i in by_hand:
                data = DataFrame(sid, b"", flags={"END_STREAM"}).serialize()
            else:
                conn.send_data(sid, b"", end_stream=True)
                data = conn.data_to_send()
            frames.append(Frame(data, "data", i, 0))
        elif step == "trailers":
            trailers = [("x-trailer", "t1"), ("x-checksum", str(r.size))]
            if i in by_hand:
                data = _by_hand_headers(conn, sid, trailers, True, 2, None)
            else:
                conn.send_headers(sid, trailers, end_stream=True)
                data = conn.data_to_send()
            frames.append(Frame(data, "trailers", i))
        elif step == "rst":
            if i in by_hand:
                data = RstStreamFrame(sid, error_code=h2.errors.ErrorCodes.CANCEL).serialize()
            else:
                conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
                data = conn.data_to_send()
            frames.append(Frame(data, "rst", i))
    return frames


def _prio(case: H2Case, prio: tuple[int, int, bool]) -> tuple[int, int, bool]:
    weight, dep, excl = prio
    return weight, case.stream_id(dep), excl


def _control(case: H2Case, conn: h2.connection.H2Connection, step: str, i: int) -> bytes:
    if step == "priority":
        # A stream of the case, or an idle one past them (a PRIORITY may come first).
        sid = case.stream_id(i) if i < len(case.requests) else 2 * len(case.requests) + 101
        conn.prioritize(sid, weight=1 + (sid * 37) % 256, depends_on=0, exclusive=False)
    elif step == "window":
        if i < 0:
            conn.increment_flow_control_window(1000 + 7 * len(case.requests))
        else:
            # h2 refuses a WINDOW_UPDATE on a stream it thinks closed: built by hand.
            return WindowUpdateFrame(case.stream_id(i), 4096).serialize()
    else:
        conn.ping(b"fuzzping")
    return conn.data_to_send()


def _by_hand_headers(
    conn: h2.connection.H2Connection,
    sid: int,
    headers: list[tuple[str, str]],
    end: bool,
    pieces: int,
    prio: tuple[int, int, bool] | None,
) -> bytes:
    """A header block in ``pieces`` fragments: HEADERS, then CONTINUATION frames."""
    block = conn.encoder.encode([(n.encode(), v.encode()) for n, v in headers])
    step = max(1, -(-len(block) // pieces))
    fragments = [block[k : k + step] for k in range(0, len(block), step)] or [b""]
    first = HeadersFrame(sid, fragments[0])
    if end:
        first.flags.add("END_STREAM")
    if prio:
        first.flags.add("PRIORITY")
        first.stream_weight = prio[0] - 1
        first.depends_on = prio[1]
        first.exclusive = prio[2]
    out = [first]
    out += [ContinuationFrame(sid, fragment) for fragment in fragments[1:]]
    out[-1].flags.add("END_HEADERS")
    return b"".join(f.serialize() for f in out)
