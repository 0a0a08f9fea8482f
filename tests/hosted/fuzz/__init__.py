"""A differential fuzzer for hosted ASGI/WSGI apps: the same bytes to veter and to
an independent server running the same instrumented app; what the app received
and what the client got must agree, after written-down normalisations.

Design
------
Servers (servers.py): real processes on free loopback ports, started once per
run and polled until their port accepts: ``veter run --interface asgi`` and
``--interface wsgi`` (single process), uvicorn with ``--http httptools`` and
``--http h11``, gunicorn ``-k gthread``. ASGI cases go to veter-asgi and both
uvicorns, WSGI cases to veter-wsgi and gunicorn: every case is run on all five.

Apps (tests/hosted/apps/probe*.py): the request's query says what the app does
(read all, part or none of the body; answer in one message, sized in n pieces or
streamed in n pieces; the answer's size; ASGI: one more receive() after the
answer). The app records what it received: scope or environ fields, the body's
length and digest, the body's end and http.disconnect (ASGI) or what reading
wsgi.input raised (WSGI), what send raised. Records stay in the app's process;
``GET /fence`` on a new connection waits until no call is running and hands them
over, so what the app saw is compared even when the client got no answer, and a
call still running after its client is done (a hang) is reported.

Cases (cases.py): seeded, 1-3 requests per connection (more than one is a
pipeline) over HTTP/1.0 and 1.1, keep-alive and close, no body, Content-Length,
chunked, ``Expect: 100-continue``; bodies of 0, 11, 1000, 70,000 (across a read
boundary) and 1,200,000 bytes (above the 1 MiB pause watermark); answers of 0,
13, 70,000 and 1,100,000 bytes. One case in five has malformed framing (chunk
syntax, a trailer Content-Length, CL with TE, repeated or signed lengths, TE in
HTTP/1.0, a body cut short by a half-close). Delivery is whole, cut at random
points, or a byte per send for the first 2 KiB (TCP_NODELAY); one case in five
half-closes (shutdown SHUT_WR) after its last byte.

Client (wire.py): a raw socket; a thread writes while the main thread reads and
parses answers strictly (framing by RFC 9112 6.3; chunked to HTTP/1.0, or both
CL and TE, is a defect). It stops at the server's close, or once every answer is
in and the connection should stay open: then one more request tells whether it
did. A hard timeout per case (8 s) makes a hang a finding.

Comparison (compare.py): per request, the normalised answer (status, headers,
framing kind, body length and digest, 100 Continue) and the app's record; then
how the connection ended. The first request that differs decides, since what
follows on a connection depends on it. rules.py holds, in one place, the
NORMALISATIONS (what two correct servers may differ in), the DIFFERENCES (where
veter deliberately differs, and where a peer is wrong: each named, counted and
printed, never silent) and KNOWN_BUGS (open veter bugs, each with its xfail test
in tests/hosted/test_fuzz_findings.py). Checks on veter alone: no app call left
running, no framing defect, no malformed body's end reaching the app, no hang.

HTTP/2 (h2cases.py, h2wire.py, h2run.py): the same probe ASGI app on veter (h2c
with prior knowledge) and on Hypercorn (hypercorn_h2.py: with one bug of its own
mended). A case is one connection of 1-5 interleaved streams, its frames made with
the ``h2`` package (by hand for CONTINUATION); the client waits for the server's
flow-control windows, stops sending on a stream the server reset, opens its own
window as it reads, and ends with a PING to see whether the connection is still
usable. Every stream whose views differ must be explained by a rule (streams are
independent), then the end state; rules.py's H2_* tables hold the rules.

Running: ``tests/hosted/test_fuzz.py`` (``make test``, Python 3.11 only: marked
slow) runs the fixed seeds of __main__.SEEDS for VETER_FUZZ_SECONDS (60) in all;
VETER_FUZZ_SEED and VETER_FUZZ_CASE replay one. ``python -m tests.hosted.fuzz
--minutes 30`` is the long run, ``--http2`` the HTTP/2 one. A failure prints its
seed and case, the case's requests and bytes, and the two sides' views where they
first differ.
"""
