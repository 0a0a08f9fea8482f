"""Every normalisation and every allowed difference of the fuzzer, in one place.

``NORMALISATIONS`` are applied to what each server gave before the comparison:
they remove what may differ between two correct servers. ``DIFFERENCES`` are the
places where veter deliberately differs (docs/asgi.md, docs/security.md) or where
a peer is known to be wrong: when the first difference on a connection matches
one, the case counts under the rule's name (the fuzzer prints the counts), not as
a pass and not as a failure. Nothing is skipped without a name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.hosted.fuzz.cases import TRUNCATING, Case
from tests.hosted.fuzz.h2cases import BODY_MALFORMED, H2Case, H2Request
from tests.hosted.fuzz.h2wire import H2Exchange, StreamResult
from tests.hosted.fuzz.wire import Answer, Exchange

# Normalisations, each applied by answer_view / record_view below.
NORMALISATIONS = {
    "server-headers": "Date, Server and veter's X-Request-ID are each server's own",
    "framing-headers": "Content-Length / Transfer-Encoding are compared as the framing kind "
    "(delimited or close), and the decoded bodies must be equal (RFC 9112 6: the server picks the framing)",
    "connection-header": "whether the connection stayed open is compared from the socket (end state), "
    "not from Connection / Keep-Alive headers",
    "header-case-order": "answer field names compared lowercased and sorted (RFC 9110 5.1, 5.3)",
    "status-line": "reason phrases and the answer's HTTP version are not compared (RFC 9112 4: "
    "the reason is ignorable; gunicorn echoes 1.0 to 1.0 clients, veter and uvicorn say 1.1)",
    "server-error-page": "a 4xx/5xx the server makes itself (no x-probe-id) is compared by status only",
    "interim-without-read": "100 Continue is compared only when the app read a non-empty body: uvicorn "
    "sends it at the first receive(), veter and gunicorn when the app is called, and veter not at all "
    "for a declared length of 0 (RFC 9110 10.1.1 lets a server omit it or send it at any time)",
    "broken-body-prefix": "for a request generated malformed, how much of its body reached the app "
    "before the error depends on each server's reads: the app's body length and digest are not compared "
    "(that it never saw the body's end is)",
    "wsgi-read-error": "the exception a WSGI app's read raises on a broken body is the server's own type",
    "end-reset-after-answers": "a server that closes with the client's bytes unread makes the kernel "
    "reset the connection; once the client has every answer, that reset and a clean close are the same",
    "wsgi-input-terminated": "gunicorn sets wsgi.input_terminated for every request, veter for a chunked "
    "body only (docs/asgi.md, WSGI apps); both streams end with b'' at the body's end, which the "
    "app's recorded body shows",
}

SERVER_HEADERS = {"date", "server", "x-request-id"}
FRAMING_HEADERS = {"content-length", "transfer-encoding"}
CONNECTION_HEADERS = {"connection", "keep-alive"}


def end_view(case: Case, exchange: Exchange) -> str:
    """How the connection ended; a reset once every answer is in counts as a close
    (end-reset-after-answers)."""
    if exchange.end == "reset" and len(exchange.answers) >= len(case.requests):
        return "eof"
    return exchange.end


def answer_view(case: Case, index: int, answer: Answer | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    request = case.requests[index] if index < len(case.requests) else None
    own = answer.header("x-probe-id") is not None
    view: dict[str, Any] = {"status": answer.status}
    if answer.status >= 400 and not own:
        return view  # server-error-page
    dropped = SERVER_HEADERS | FRAMING_HEADERS | CONNECTION_HEADERS
    view["headers"] = sorted((n, v) for n, v in answer.headers if n not in dropped)
    view["framing"] = "delimited" if answer.framing in ("length", "chunked") else answer.framing
    view["body"] = (answer.body_len, answer.body_sha)
    if request is not None and request.read != "none" and request.size > 0:
        view["interim"] = answer.interim
    return view


def record_view(case: Case, index: int, record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    view = dict(record)
    request = case.requests[index]
    if request.malformed:
        view.pop("body_len", None)  # broken-body-prefix
        view.pop("body_sha", None)
    view.pop("input_terminated", None)  # wsgi-input-terminated
    view["events"] = [
        "raised" if e.startswith("raised") else e  # wsgi-read-error
        for e in view.get("events", [])
    ]
    return view


@dataclass
class Side:
    """What one server did with a case: the client's exchange and the app's records."""

    server: str
    exchange: Exchange
    records: dict[int, dict[str, Any]]
    running: list[str]

    def answer(self, i: int) -> Answer | None:
        answers = self.exchange.answers
        return answers[i] if i < len(answers) else None


@dataclass
class Context:
    case: Case
    index: int  # the request whose view first differs (len(requests): the end state)
    veter: Side
    peer: Side

    @property
    def request(self) -> Any:
        return self.case.requests[self.index] if self.index < len(self.case.requests) else None

    def veter_refused(self) -> bool:
        """veter answered this request with its own 4xx and its app never saw the body's end."""
        answer = self.veter.answer(self.index)
        record = self.veter.records.get(self.index) or {}
        return (
            answer is not None
            and 400 <= answer.status < 500
            and answer.header("x-probe-id") is None
            and "end" not in record.get("events", [])
            and len(self.veter.exchange.answers) == self.index + 1
        )


@dataclass(frozen=True)
class Difference:
    name: str
    why: str
    applies: Callable[[Context], bool]


# veter refuses these with 400 where a peer may accept them (docs/security.md,
# "Stricter than the RFCs and than h11"; the value is the id used there).
STRICTER = {
    "chunk-size-ws": "chunk-ext-syntax",
    "chunk-bare-lf": "bare-lf",
    "chunk-overflow": "chunk-size-overflow",
    "trailer-cl": "trailer-fields",
    "cl-and-te": "cl-and-te",
    "cl-repeated": "cl-repeated",
    "cl-sign": "number-syntax",
    "te-http10": "te-in-http10",
}


def _stricter(ctx: Context) -> bool:
    request = ctx.request
    return request is not None and request.malformed in STRICTER and ctx.veter_refused()


def _peer_closed_before(ctx: Context) -> bool:
    """The peer's client got nothing from request ``index`` on: the connection ended."""
    return len(ctx.peer.exchange.answers) <= ctx.index and ctx.peer.exchange.end in ("eof", "reset")


def _http10_keep_alive(ctx: Context) -> bool:
    if not ctx.peer.server.startswith("uvicorn"):
        return False
    request = ctx.request
    # Closing with the next request unread, uvicorn's own answer can be lost to the reset.
    if (
        request is not None
        and request.version == "1.0"
        and request.keep_alive
        and ctx.index < len(ctx.case.requests) - 1
        and _peer_closed_before(ctx)
    ):
        return True
    if ctx.index == 0:
        return False
    before = ctx.case.requests[ctx.index - 1]
    return (
        before.version == "1.0"
        and before.keep_alive
        and _peer_closed_before(ctx)
        and ctx.peer.records.get(ctx.index) is None
    )


def _half_close(ctx: Context) -> bool:
    return ctx.case.half_close and ctx.peer.server.startswith("uvicorn") and _peer_closed_before(ctx)


def _peer_reset(ctx: Context) -> bool:
    veter, peer = ctx.veter.exchange, ctx.peer.exchange
    if ctx.request is None:  # the end state: both closed there, the peer with input unread
        return peer.end == "reset" and veter.end == "eof"
    return peer.end == "reset" and _peer_closed_before(ctx) and len(veter.answers) > len(peer.answers)


def _peer_hang(ctx: Context) -> bool:
    return ctx.peer.exchange.end == "timeout" and ctx.veter.exchange.end != "timeout"


def _truncated_body(ctx: Context) -> bool:
    """A body cut short by the client's half-close: veter's WSGI input raises
    ClientDisconnected (the app lets it out: 500), its ASGI receive() says
    http.disconnect; gunicorn hands a short body over as if whole, or raises too."""
    request = ctx.request
    if request is None or request.malformed not in TRUNCATING:
        return False
    events = (ctx.veter.records.get(ctx.index) or {}).get("events", [])
    return "end" not in events


def _http10_no_length_close(ctx: Context) -> bool:
    """veter closed after answering an HTTP/1.0 request whose app gave no length
    (HEAD included), saying Connection: close; the peer kept the connection."""
    if ctx.index == 0:
        return False
    before = ctx.case.requests[ctx.index - 1]
    mine = ctx.veter.answer(ctx.index - 1)
    return (
        before.version == "1.0"
        and before.answer != "sized"
        and mine is not None
        and (mine.header("connection") or "").lower() == "close"
        and len(ctx.veter.exchange.answers) == ctx.index
    )


def _peer_chunks_http10(ctx: Context) -> bool:
    theirs = ctx.peer.answer(ctx.index)
    return theirs is not None and theirs.defect == "chunked answer to an HTTP/1.0 request"


def _peer_drops_answer(ctx: Context) -> bool:
    """The peer's app did what veter's did, but the peer's client got no answer:
    the request's body was left unread and the peer closed without draining it."""
    request = ctx.request
    if request is None or not _peer_closed_before(ctx):
        return False
    same_app = record_view(ctx.case, ctx.index, ctx.veter.records.get(ctx.index)) == record_view(
        ctx.case, ctx.index, ctx.peer.records.get(ctx.index)
    )
    return _input_unread(ctx) and same_app


def _input_unread(ctx: Context) -> bool:
    """Bytes the client sent were unread when request ``index``'s answer ended the
    connection: a body the app left, or requests pipelined behind it."""
    requests = ctx.case.requests
    return ctx.index < len(requests) - 1 or any(_unread(r) for r in requests[: ctx.index + 1])


def _peer_cut_answer(ctx: Context) -> bool:
    """The peer's answer, ended by closing, is shorter than veter's whole one: the
    peer closed with the client's body unread, and the reset cut what was in flight."""
    mine, theirs = ctx.veter.answer(ctx.index), ctx.peer.answer(ctx.index)
    return (
        mine is not None
        and theirs is not None
        and theirs.framing == "close"
        and theirs.body_len < mine.body_len
        and _input_unread(ctx)
    )


def _unread(request: Any) -> bool:
    """The app left (part of) the body unread; a chunked body has its last chunk to read even when empty."""
    return (
        request is not None and request.read != "all" and (request.size > 0 or request.framing == "chunked")
    )


def _unread_body_close(ctx: Context) -> bool:
    """After a request whose body the app left (part) unread, one side closed: veter
    saying so in its answer, or the peer."""
    if ctx.index == 0 or not _unread(ctx.case.requests[ctx.index - 1]):
        return False
    for side, other in ((ctx.veter, ctx.peer), (ctx.peer, ctx.veter)):
        answers = side.exchange.answers
        if len(answers) != ctx.index or side.exchange.end not in ("eof", "reset"):
            continue
        if side is ctx.peer or (answers[-1].header("connection") or "").lower() == "close":
            return len(other.exchange.answers) >= ctx.index
    return False


def _h11_refuses_after_http10(ctx: Context) -> bool:
    """uvicorn-h11 answers 400 in place of the app's answer to an HTTP/1.0 request
    that has another pipelined behind it (h11 refuses data after a 1.0 request)."""
    request = ctx.request
    theirs = ctx.peer.answer(ctx.index)
    return (
        ctx.peer.server == "uvicorn-h11"
        and request is not None
        and request.version == "1.0"
        and ctx.index < len(ctx.case.requests) - 1
        and theirs is not None
        and theirs.status == 400
        and theirs.header("x-probe-id") is None
    )


def _peer_reads_ahead(ctx: Context) -> bool:
    """The peer answered 400 to request ``index`` (or nothing) for a malformed
    request pipelined after it, which it parsed while the app was still running."""
    later = any(r.malformed for r in ctx.case.requests[ctx.index + 1 :])
    theirs = ctx.peer.answer(ctx.index)
    refused = theirs is None or (theirs.status == 400 and theirs.header("x-probe-id") is None)
    return later and refused and ctx.peer.server.startswith("uvicorn")


def _answered_before_the_break(ctx: Context) -> bool:
    """The app answered without reading a body whose framing breaks later: veter's
    answer (the app's) left before the break arrived; the connection then closed."""
    request = ctx.request
    mine = ctx.veter.answer(ctx.index)
    return (
        request is not None
        and request.malformed is not None
        and request.read != "all"
        and mine is not None
        and mine.header("x-probe-id") is not None
        and len(ctx.veter.exchange.answers) == ctx.index + 1
        and ctx.veter.exchange.end in ("eof", "reset")
    )


def _broken_body_cuts_answer(ctx: Context) -> bool:
    """veter found the body's framing broken while the app (which had not read it
    all) was answering: it stopped the answer and closed, so the client holds an
    incomplete answer of the app's and no 400."""
    request = ctx.request
    leftover = ctx.veter.exchange.leftover
    return (
        request is not None
        and request.malformed is not None
        and request.read != "all"
        and len(ctx.veter.exchange.answers) == ctx.index
        and ctx.veter.exchange.end in ("eof", "reset")
        and re.match(rb"(HTTP/1\.1 100 [^\r]*\r\n\r\n)?HTTP/1\.1 200 ", leftover) is not None
        and b"x-probe-id" in leftover.lower()
    )


def _unread_broken_body(ctx: Context) -> bool:
    request = ctx.request
    return (
        request is not None
        and request.malformed is not None
        and request.read != "all"
        and ctx.veter_refused()
    )


def _close_delimited(ctx: Context) -> bool:
    """The peer sent answer ``index`` delimited by closing, veter with a length."""
    if ctx.request is None or ctx.request.answer == "sized":
        return False
    mine, theirs = ctx.veter.answer(ctx.index), ctx.peer.answer(ctx.index)
    if mine is None or theirs is None or theirs.framing != "close" or mine.framing == "close":
        return False
    a = answer_view(ctx.case, ctx.index, mine) or {}
    b = answer_view(ctx.case, ctx.index, theirs) or {}
    a.pop("framing", None)
    b.pop("framing", None)
    return a == b and len(ctx.peer.exchange.answers) == ctx.index + 1


DIFFERENCES: list[Difference] = [
    Difference(
        "stricter-parser",
        "veter answers 400 to framing docs/security.md lists as refused (the id is in STRICTER); "
        "a peer that accepts it reads the rest of the connection differently",
        _stricter,
    ),
    Difference(
        "http10-keep-alive",
        "uvicorn closes an HTTP/1.0 connection after each answer even when the request asked for "
        "keep-alive; veter (and gunicorn) keep it open (RFC 9112 9.3 allows both; docs/security.md)",
        _http10_keep_alive,
    ),
    Difference(
        "half-close",
        "uvicorn takes the client's FIN (shutdown of its sending side) for a disconnect and sends no "
        "more answers; veter (and gunicorn) answer every request that arrived whole before it",
        _half_close,
    ),
    Difference(
        "close-delimited-answer",
        "an answer the app gave no length: veter adds Content-Length, a peer may end it by closing "
        "(HTTP/1.0 has no chunked coding); the peer's connection then ends there",
        _close_delimited,
    ),
    Difference(
        "peer-chunks-http10",
        "uvicorn's httptools protocol answers an HTTP/1.0 request in chunked coding when the app gives "
        "no length, which a 1.0 client cannot read (RFC 9112 7.1); veter ends such an answer by closing",
        _peer_chunks_http10,
    ),
    Difference(
        "peer-drops-answer",
        "uvicorn and gunicorn close a connection whose request body the app left unread without "
        "draining it, so the client's next bytes draw a reset that destroys the answer; veter sends "
        "the answer, then half-closes and drains (lingering close)",
        _peer_drops_answer,
    ),
    Difference(
        "peer-cut-answer",
        "the same reset cuts a peer's answer that is ended by closing (uvicorn-h11 with HTTP/1.0): "
        "the client reads less than the app sent",
        _peer_cut_answer,
    ),
    Difference(
        "unread-body-close",
        "after an answer to a request whose body the app left unread, a server may close rather than "
        "read the rest (RFC 9112 9.3); veter does when the rest has not all arrived, and says "
        "Connection: close; gunicorn always with Expect: 100-continue",
        _unread_body_close,
    ),
    Difference(
        "unread-broken-body",
        "veter reads the body an app left unread and answers 400 to its broken framing in place of the "
        "app's answer; a peer that never reads it answers the app's 200 and fails on what follows",
        _unread_broken_body,
    ),
    Difference(
        "answered-before-the-break",
        "the app answered without reading (all of) a body whose framing breaks further on: the answer left "
        "before the break arrived, and the connection closed; a peer that saw the break first says 400",
        _answered_before_the_break,
    ),
    Difference(
        "broken-body-cuts-answer",
        "veter found broken framing in a body the app had not read (all of) while the app's answer was "
        "going out: it stops that answer and closes, so the client never holds a whole answer to a "
        "malformed request; a peer that finds the break later sends the app's answer whole",
        _broken_body_cuts_answer,
    ),
    Difference(
        "h11-after-http10",
        "uvicorn's h11 protocol answers 400 in place of the app's answer to an HTTP/1.0 request with "
        "another pipelined behind it",
        _h11_refuses_after_http10,
    ),
    Difference(
        "peer-reads-ahead",
        "uvicorn parses pipelined requests while the app runs: a malformed one behind makes it answer "
        "400 (or close) in place of the answer to an earlier, well-formed request",
        _peer_reads_ahead,
    ),
    Difference(
        "truncated-body",
        "a body the client cut short (then half-closed): veter tells the app (WSGI: wsgi.input raises "
        "ClientDisconnected, an OSError, which the probe app lets out: 500; ASGI: http.disconnect); "
        "gunicorn hands a short Content-Length body over as if whole",
        _truncated_body,
    ),
    Difference(
        "http10-no-length-close",
        "an answer to an HTTP/1.0 request with no length from the app: veter says Connection: close and "
        "closes after it (even for HEAD, where no body needs the close); gunicorn keeps a HEAD's connection",
        _http10_no_length_close,
    ),
    Difference(
        "peer-hang",
        "the peer neither answered nor closed within the case's time (gunicorn waiting on a body "
        "framing it cannot parse, e.g. an overflowing chunk size); veter answered 400 or closed",
        _peer_hang,
    ),
    Difference(
        "peer-reset",
        "the peer closed with the client's bytes unread, so the kernel reset the connection and the "
        "client lost what was in flight; veter half-closes and drains first (--linger-timeout)",
        _peer_reset,
    ),
]


# Open veter bugs the fuzzer found: each an xfail(strict) test in
# tests/hosted/test_fuzz_findings.py, named here with a predicate that recognises
# its mismatch, so a run counts it by name (not as a failure) until the fix lands;
# then the strict xfail fails, and the mark and the entry go. The first five
# (an answer ended by closing followed by more, receive() after the answer, a WSGI
# stream to a half-closed client, no lingering close, a big answer cut short while
# an unread body arrived) were fixed in bbcdb29, the sixth (a close after an answer
# ended by closing, with pipelined input arriving, reset the connection and cut the
# answer) in the commit that emptied this list; a run that finds one again fails
# with its seed.
KNOWN_BUGS: list[Difference] = []


def known_bug(ctx: Context) -> str | None:
    for bug in KNOWN_BUGS:
        if bug.applies(ctx):
            return bug.name
    return None


def allowed(ctx: Context) -> str | None:
    """The name of the difference that explains the first mismatch, if any."""
    for difference in DIFFERENCES:
        if difference.applies(ctx):
            if difference.name == "stricter-parser":
                return f"stricter-parser:{STRICTER[ctx.request.malformed]}"
            return difference.name
    return None


# ---------------------------------------------------------------------------
# HTTP/2: veter-asgi against Hypercorn, the same frames to both (h2cases.py,
# h2wire.py). Streams are independent: every stream whose views differ must be
# explained (h2run.compare), then how the connection ended.

H2_NORMALISATIONS = {
    "h2-server-headers": "date, server and veter's x-request-id are each server's own",
    "h2-content-length": "content-length in an answer is not compared (veter adds one to an answer "
    "given whole, Hypercorn never does); the client checks it against the DATA received (RFC 9113 "
    "8.1.1), on each server alone",
    "h2-field-order": "the fields of the app's scope and of the answer are compared sorted by name, "
    "fields of the same name kept in their order (RFC 9110 5.3: only that order carries meaning); "
    "veter puts content-length last, Hypercorn where the client sent it",
    "h2-receive-after-answer": "a receive() after the answer: veter says http.disconnect (the ASGI "
    "spec's words), Hypercorn hands over the body's messages the app left unread first ('more', "
    "'end'); only an http.disconnect or a timeout is compared",
    "h2-server-error-page": "an answer the server makes itself (no x-probe-id) is compared by status only",
    "h2-malformed-refusal": "a malformed request (RFC 9113 8.1.1) is refused when the stream is reset "
    "with PROTOCOL_ERROR or the connection ends with GOAWAY PROTOCOL_ERROR (5.4.2: an endpoint may treat "
    "a stream error as a connection error; the h2 package under Hypercorn always does), with or without "
    "an error answer before it (8.1.1 allows one); either is 'refused'",
    "h2-broken-body-prefix": "for a request whose body is malformed (content-length against DATA) or "
    "that the client reset mid-body, how much of the body reached the app first is timing: its length "
    "and digest are not compared (that the app saw no end is, on each server alone)",
    "h2-client-reset-answer": "what the client got on a stream after resetting it itself is timing "
    "(the server may have answered part or all first): not compared",
    "hypercorn-data-after-answer": "Hypercorn 0.18 raises KeyError on DATA for a stream whose app has "
    "answered (a body it left unread), which drops the connection and leaves the other streams' apps "
    "waiting forever; the fuzzer runs it with that mended (hypercorn_h2.py: such DATA is dropped and "
    "its window given back)",
}


def _sorted_fields(fields: list[Any]) -> list[Any]:
    """Stable sort by name (h2-field-order)."""
    return sorted(fields, key=lambda f: f[0])


def h2_answer_view(
    case: H2Case, exchange: H2Exchange, index: int, result: StreamResult | None
) -> dict[str, Any] | None:
    request = case.requests[index]
    if request.reset_after is not None:
        return {"client-reset": True}  # h2-client-reset-answer
    if request.malformed and h2_refused(case, exchange, index):
        return {"malformed": "refused"}  # h2-malformed-refusal
    if result is None:
        return None
    view: dict[str, Any] = {"status": result.status, "outcome": _outcome(result)}
    if result.status is not None and result.status >= 400 and result.header("x-probe-id") is None:
        return view  # h2-server-error-page
    dropped = {"date", "server", "x-request-id", "content-length"}
    view["headers"] = _sorted_fields([(n, v) for n, v in result.headers if n not in dropped])
    view["body"] = (result.body_len, result.body_sha)
    view["trailers"] = result.trailers
    view["interim"] = result.interim
    return view


def _outcome(result: StreamResult) -> str:
    if result.ended:
        return "end"
    return f"reset:{result.reset}" if result.reset else "cut"


def h2_refused(case: H2Case, exchange: H2Exchange, index: int) -> bool:
    """The malformed request ``index`` was refused (h2-malformed-refusal)."""
    result = exchange.streams.get(index)
    if result is not None and result.header("x-probe-id") is not None:
        return False
    if result is not None and result.reset == "PROTOCOL_ERROR":
        return True
    return exchange.end == "goaway:PROTOCOL_ERROR" and (result is None or not result.ended)


def h2_record_view(case: H2Case, index: int, record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    view = dict(record)
    request = case.requests[index]
    if request.malformed in BODY_MALFORMED or request.reset_after is not None:
        view.pop("body_len", None)  # h2-broken-body-prefix
        view.pop("body_sha", None)
    headers = [tuple(h) for h in view.get("headers", [])]
    view["headers"] = _sorted_fields(headers)
    if view.get("after") in ("more", "end"):
        view["after"] = "http.disconnect"  # h2-receive-after-answer
    return view


@dataclass
class H2Side:
    server: str
    exchange: H2Exchange
    records: dict[int, dict[str, Any]]
    running: list[str]


@dataclass
class H2Context:
    case: H2Case
    index: int  # a request whose views differ (len(requests): the end state)
    veter: H2Side
    peer: H2Side

    @property
    def request(self) -> H2Request | None:
        return self.case.requests[self.index] if self.index < len(self.case.requests) else None

    def result(self, side: H2Side) -> StreamResult | None:
        return side.exchange.streams.get(self.index)

    def record(self, side: H2Side) -> dict[str, Any] | None:
        return h2_record_view(self.case, self.index, side.records.get(self.index))


@dataclass(frozen=True)
class H2Difference:
    name: str
    why: str
    applies: Callable[[H2Context], bool]


def _h2_malformed_goaway(ctx: H2Context) -> bool:
    """The end state: veter kept the connection after refusing a malformed stream,
    Hypercorn ended it with GOAWAY PROTOCOL_ERROR."""
    return (
        ctx.request is None
        and any(r.malformed for r in ctx.case.requests)
        and ctx.veter.exchange.end == "open"
        and ctx.peer.exchange.end == "goaway:PROTOCOL_ERROR"
    )


def _h2_answered_before_the_break(ctx: H2Context) -> bool:
    """A body malformed by its length (cl-more, cl-less) that the app did not read
    to the end: one server's app answered before the break arrived (its client has
    the app's whole answer), the other refused the stream first."""
    request = ctx.request
    if request is None or request.malformed not in BODY_MALFORMED or request.read == "all":
        return False
    answered = [_answered(ctx, s) for s in (ctx.veter, ctx.peer)]
    refused = [_refused_or_cut(ctx, s) for s in (ctx.veter, ctx.peer)]
    one_each = (answered[0] and refused[1]) or (answered[1] and refused[0])
    return one_each and ctx.record(ctx.veter) == ctx.record(ctx.peer)


def _answered(ctx: H2Context, side: H2Side) -> bool:
    """The app's answer whole, or cut by the reset that refused the stream once the break came."""
    result = ctx.result(side)
    return (
        result is not None
        and result.header("x-probe-id") is not None
        and (result.ended or result.reset == "PROTOCOL_ERROR")
    )


def _refused_or_cut(ctx: H2Context, side: H2Side) -> bool:
    """Refused, or the app's answer cut by GOAWAY PROTOCOL_ERROR."""
    result = ctx.result(side)
    cut = result is not None and not result.ended and side.exchange.end == "goaway:PROTOCOL_ERROR"
    return cut or h2_refused(ctx.case, side.exchange, ctx.index)


def _h2_malformed_body_unseen(ctx: H2Context) -> bool:
    """A request whose head is fine and whose DATA break its content-length: both
    refused it, one server's app was called (and saw no end), the other's not."""
    request = ctx.request
    if request is None or request.malformed not in BODY_MALFORMED:
        return False
    refused = all(h2_refused(ctx.case, s.exchange, ctx.index) for s in (ctx.veter, ctx.peer))
    records = [ctx.record(s) for s in (ctx.veter, ctx.peer)]
    return refused and records.count(None) == 1


def _h2_answered_before_the_break_unseen(ctx: H2Context) -> bool:
    """The two timings above at once: veter's app answered before the break arrived
    (its client has the answer's head and what left before the reset), Hypercorn
    refused the stream without calling its app (the head and the break in one read)."""
    request = ctx.request
    if request is None or request.malformed not in BODY_MALFORMED or request.read == "all":
        return False
    mine = ctx.record(ctx.veter)
    return (
        _answered(ctx, ctx.veter)
        and _refused_or_cut(ctx, ctx.peer)
        and ctx.record(ctx.peer) is None
        and mine is not None
        and "end" not in mine.get("events", [])
    )


def _hypercorn_stuck_call(ctx: H2Context) -> bool:
    """Hypercorn's app call for this request was still running when the fence gave
    up waiting (its record is missing); veter's finished."""
    return (
        ctx.index < len(ctx.case.requests)
        and ctx.peer.records.get(ctx.index) is None
        and ctx.case.ident(ctx.index) in ctx.peer.running
        and ctx.veter.records.get(ctx.index) is not None
    )


def _hypercorn_no_second_disconnect(ctx: H2Context) -> bool:
    """The app saw http.disconnect (the client reset the stream), answered, and
    called receive() again: veter said http.disconnect again, Hypercorn nothing
    (the probe's receive() timed out)."""
    mine, theirs = ctx.record(ctx.veter), ctx.record(ctx.peer)
    if mine is None or theirs is None or theirs.get("after") != "timeout":
        return False
    if "disconnect" not in theirs.get("events", []) or mine.get("after") != "http.disconnect":
        return False
    return {**mine, "after": None} == {**theirs, "after": None}


def _hypercorn_drops_connection(ctx: H2Context) -> bool:
    """Hypercorn closed the connection without a GOAWAY, veter kept it: the end
    state, or a stream the peer's client got no whole answer on."""
    if ctx.veter.exchange.end != "open" or ctx.peer.exchange.end not in ("eof", "reset"):
        return False
    theirs = ctx.result(ctx.peer)
    return ctx.request is None or theirs is None or not theirs.ended


def _hypercorn_hang(ctx: H2Context) -> bool:
    """Hypercorn neither finished nor closed within the case's time, veter did."""
    return ctx.peer.exchange.end == "timeout" and ctx.veter.exchange.end != "timeout"


H2_DIFFERENCES: list[H2Difference] = [
    H2Difference(
        "h2-malformed-goaway",
        "a malformed request: veter resets its stream (RFC 9113 8.1.1) and keeps the connection; "
        "Hypercorn's h2 package makes every malformed request a connection error (GOAWAY "
        "PROTOCOL_ERROR, allowed by 5.4.2)",
        _h2_malformed_goaway,
    ),
    H2Difference(
        "h2-answered-before-the-break",
        "a body whose content-length the DATA break, and an app that does not read it all: whether "
        "the app's answer leaves before the break is found is timing; a server that found it first "
        "refuses the stream (PROTOCOL_ERROR), the other has sent the app's whole answer",
        _h2_answered_before_the_break,
    ),
    H2Difference(
        "h2-malformed-body-unseen",
        "a request whose head is fine and whose DATA break its content-length: the h2 package under "
        "Hypercorn drops the head's event too when the break comes in the same read, so its app may "
        "never be called; veter calls the app with the head and tells it the stream is gone",
        _h2_malformed_body_unseen,
    ),
    H2Difference(
        "h2-answered-before-the-break-unseen",
        "a body whose content-length the DATA break, and an app that does not read it: veter's app "
        "answered before the break arrived (the answer's head and its start, then the reset), while "
        "the h2 package under Hypercorn saw the head and the break in one read and never called its app",
        _h2_answered_before_the_break_unseen,
    ),
    H2Difference(
        "hypercorn-stuck-call",
        "Hypercorn's app call for the request was still running after the client was done and the "
        "fence's wait (a stream reset or a dropped connection it does not tell the app of while the "
        "app sends); veter's call finished",
        _hypercorn_stuck_call,
    ),
    H2Difference(
        "hypercorn-no-second-disconnect",
        "after http.disconnect (the client reset the stream) and its answer, the app's next receive() "
        "gets http.disconnect again from veter (ASGI: every receive() after a disconnect says so) and "
        "nothing from Hypercorn",
        _hypercorn_no_second_disconnect,
    ),
    H2Difference(
        "hypercorn-drops-connection",
        "Hypercorn closed the connection without GOAWAY (RFC 9113 5.4.1 asks for one), often with an "
        "app call it never ended (seen with trailers and PRIORITY frames on streams it had finished), "
        "so later streams got nothing; veter kept the connection open",
        _hypercorn_drops_connection,
    ),
    H2Difference(
        "hypercorn-hang",
        "Hypercorn stops reading the whole connection while one stream's app leaves its body unread "
        "(its app queue holds 10 messages), so WINDOW_UPDATEs that other streams' answers wait for "
        "are not read: the client waits out the case's time; veter finishes (the peer's fault)",
        _hypercorn_hang,
    ),
]


def _h2_answer_reset_early(ctx: H2Context) -> bool:
    """veter reset the stream with NO_ERROR after the app's answer but before all of
    its DATA went out (it waited for the client's window): the client holds part of
    the answer and no END_STREAM."""
    result = ctx.result(ctx.veter)
    return (
        result is not None
        and result.header("x-probe-id") is not None
        and not result.ended
        and result.reset == "NO_ERROR"
    )


# Open veter bugs the HTTP/2 run found, each with its xfail test in
# tests/hosted/test_fuzz_findings.py (as KNOWN_BUGS above).
H2_KNOWN_BUGS: list[H2Difference] = [
    H2Difference(
        "test_h2_answer_outlives_the_reset_of_an_unread_body",
        "the RST_STREAM NO_ERROR of an unread body discards the answer's DATA still waiting for "
        "the client's window",
        _h2_answer_reset_early,
    ),
]


def h2_allowed(ctx: H2Context) -> str | None:
    for difference in H2_DIFFERENCES:
        if difference.applies(ctx):
            return difference.name
    return None


def h2_known_bug(ctx: H2Context) -> str | None:
    for bug in H2_KNOWN_BUGS:
        if bug.applies(ctx):
            return bug.name
    return None
