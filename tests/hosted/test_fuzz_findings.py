"""What the hosted-app fuzzer (tests/hosted/fuzz/) found, each as the smallest
exchange that shows it, against veter serving the fuzzer's probe apps
(tests/hosted/apps/probe.py: the query says what the app does).

A test marked xfail(strict) is a bug still open: it fails today and must pass
once fixed (then the mark comes off; the first four were fixed together). The seed and case that found each are
named in its docstring (replay: VETER_FUZZ_SEED=S VETER_FUZZ_CASE=C python -m
tests.hosted.fuzz).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.events
import pytest

from tests.hosted.fuzz.servers import VETER, Server

TIMEOUT = 5.0


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Server]]:
    started = {name: Server(spec) for name, spec in VETER.items()}
    try:
        for server in started.values():
            server.wait_ready()
        yield started
    finally:
        for server in started.values():
            server.close()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _read_to_end(sock: socket.socket) -> tuple[bytes, str]:
    """Everything until the server closes, and how it closed ("eof" or "reset")."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, "reset"
        if not chunk:
            return data, "eof"
        data += chunk


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_close_delimited_answer_is_the_last(servers: dict[str, Server], interface: str) -> None:
    """Seed 1 case 17 (WSGI). An HTTP/1.0 keep-alive request whose app streams its
    answer without a length gets `Connection: close` and a body ended by closing;
    nothing may follow it (RFC 9112 6.3, 9.6), or the client reads the next answer
    as part of this one's body."""
    with _connect(servers[interface].port) as sock:
        sock.sendall(
            b"GET /p/a?id=a&read=none&answer=stream&n=2&size=13 HTTP/1.0\r\nHost: x\r\n"
            b"Connection: keep-alive\r\n\r\n"
            b"GET /p/b?id=b&read=none&answer=one&size=5 HTTP/1.0\r\nHost: x\r\n\r\n"
        )
        data, _ = _read_to_end(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Connection: close" in head
    assert body == b"0123456789abc"


def test_receive_after_the_answer_is_a_disconnect(servers: dict[str, Server]) -> None:
    """Seed 1 case 39. ASGI (HTTP connection scope, "http.disconnect"): sent when
    receive is called after a response has been sent; uvicorn does so, and so do
    docs/asgi.md's words. veter hands over the pending (empty) body message first."""
    server = servers["asgi"]
    with _connect(server.port) as sock:
        sock.sendall(
            b"GET /p/g?id=g&read=none&answer=one&size=3&after=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        _read_to_end(sock)
    records, _ = server.fence()
    (record,) = [r for r in records if r["id"] == "g"]
    assert record["after"] == "http.disconnect"


def test_wsgi_streamed_answer_to_a_half_closed_client(servers: dict[str, Server]) -> None:
    """Seed 1 cases 4, 15 and 66. A client that shuts down its sending side once
    its request is out (nc, some proxies and scripts) still reads: the whole
    answer is due, as veter's own end_of_input says ("answer what is in flight,
    then close"). The ASGI path sends it all; the WSGI path stops after the
    iterable's first block."""
    with _connect(servers["wsgi"].port) as sock:
        # Three blocks of 366,667 bytes: the client's close is seen while the first is written.
        sock.sendall(b"GET /p/h?id=h&read=none&answer=stream&n=3&size=1100000 HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.shutdown(socket.SHUT_WR)
        data, end = _read_to_end(sock)
    assert end == "eof"
    chunks = data.partition(b"\r\n\r\n")[2]
    assert len(b"".join(chunks.split(b"\r\n")[1::2])) == 1_100_000


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_closing_after_an_unread_body_lingers(servers: dict[str, Server], interface: str) -> None:
    """Seed 1 cases 40 and 65. The app answers without reading a body that is still
    arriving, and veter closes the connection (`Connection: close`). A client still
    sending must not be reset: RFC 9112 9.6 (close the sending side, go on reading
    a while), as veter does after its own 400 and 413 (--linger-timeout). The
    fuzzer's client, which reads while it writes, lost the whole answer to the
    reset. Here the client reads the answer and the close, then sends the rest of
    the declared body: each write after the first meets the reset."""
    with _connect(servers[interface].port) as sock:
        sock.sendall(
            b"POST /p/l?id=l&read=none&answer=one&size=10 HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 70000\r\nConnection: close\r\n\r\n" + b"x" * 1000
        )
        data, end = _read_to_end(sock)
        assert (data.endswith(b"0123456789"), end) == (True, "eof")
        for _ in range(69):
            sock.sendall(b"y" * 1000)


def test_whole_answer_while_an_unread_body_arrives(servers: dict[str, Server]) -> None:
    """Seed 4 case 275 (and 4-28, 4-160 on the WSGI path, where it is rarer). A
    `Connection: close` upload of 1.2 MB that the app does not read; the app
    answers 1.1 MB with its length. The client writes the body while it reads, as
    any client with a reader and a writer does. The answer must arrive whole: veter
    sends a close after a part of it (clean EOF, less than Content-Length)."""
    sock = _connect(servers["asgi"].port)

    def write() -> None:
        with contextlib.suppress(OSError):  # the body may be refused once answered
            sock.sendall(
                b"PUT /p/w?id=w&read=none&answer=sized&n=2&size=1100000 HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 1200000\r\nConnection: close\r\n\r\n"
            )
            for _ in range(0, 1_200_000, 65536):
                sock.sendall(b"b" * 65536)

    writer = threading.Thread(target=write, daemon=True)
    with sock:
        writer.start()
        data, _ = _read_to_end(sock)
        writer.join(TIMEOUT)
    assert len(data.partition(b"\r\n\r\n")[2]) == 1_100_000


def test_close_delimited_answer_survives_pipelined_input(servers: dict[str, Server]) -> None:
    """Seeds 127 case 34 and 128 case 548 (the second long run, after bbcdb29). The
    answer to an HTTP/1.0 keep-alive GET that the app streams without a length is
    the connection's last (ended by closing); the client has already written its
    next request when veter closes. veter must linger as it does after an unread
    body, or the reset throws away the end of the answer (the fuzzer's client got
    128,000 of 1,100,000 bytes). Whether the next request's bytes are still unread
    when veter closes is a race (about one exchange in three here), so the exchange
    is repeated: each must end whole and with a clean close."""
    cut = []
    for _ in range(20):
        with _connect(servers["asgi"].port) as sock:
            sock.sendall(
                b"GET /p/c?id=c&read=none&answer=stream&n=3&size=1100000 HTTP/1.0\r\nHost: x\r\n"
                b"Connection: keep-alive\r\n\r\n"
            )
            sock.recv(1, socket.MSG_PEEK)  # the answer has started: veter reads no more
            with contextlib.suppress(OSError):
                sock.sendall(b"GET /p/d?id=d&read=none&answer=one&size=3 HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
            data, end = _read_to_end(sock)
        got = len(data.partition(b"\r\n\r\n")[2])
        if (got, end) != (1_100_000, "eof"):
            cut.append((got, end))
    assert not cut


def test_fence_answers_json(servers: dict[str, Server]) -> None:
    """The probe apps' fence, which every test above relies on, answers JSON."""
    for server in servers.values():
        with _connect(server.port) as sock:
            sock.sendall(b"GET /fence HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data, _ = _read_to_end(sock)
        assert set(json.loads(data.partition(b"\r\n\r\n")[2])) == {"records", "running"}


def test_h2_answer_outlives_the_reset_of_an_unread_body(servers: dict[str, Server]) -> None:
    """HTTP/2 seed 1 case 16 (python -m tests.hosted.fuzz --http2; also 1-4, 1-14, 3-54).
    A POST whose 11-byte body is still on its way (here: sent once the answer has
    begun) and that the app does not read; the app answers 70,000 bytes, more than
    the client's initial window of 65,535. veter sends the first 65,535 bytes, then
    RST_STREAM NO_ERROR: the client, which opens its window as it reads, never gets
    the rest nor END_STREAM. Hypercorn sends it all."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
                            (":path", "/p/r?id=r&read=none&answer=sized&n=1&size=70000"),
                            ("content-length", "11")])  # fmt: skip
    body = bytearray()
    ended = reset = None
    with _connect(servers["asgi"].port) as sock:
        sock.sendall(client.data_to_send())
        while ended is None and reset is None:
            data = sock.recv(65536)
            if not data:
                break
            for event in client.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    client.send_data(1, b"hello world", end_stream=True)
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    client.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
                elif isinstance(event, h2.events.StreamReset):
                    reset = event.error_code
            sock.sendall(client.data_to_send())
    assert (len(body), ended, reset) == (70_000, True, None)
