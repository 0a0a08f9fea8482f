"""HTTP/2 attacks against a real `veter run` (one worker, every setting at its
default), each with a well-behaved client beside it.

Each test runs one attack, built frame by frame (`h2frames`), for a bounded time:
an attack the server ends with GOAWAY is run again on a new connection until the
time is up, as an attacker would. Meanwhile an httpx HTTP/2 client keeps asking
for ``GET /`` on a connection of its own, and the worker's RSS is sampled. Every
test then checks the attacker's connection ended as docs/security.md ("HTTP/2")
says, that every request of the good client was answered 200 (no error, reset or
timeout) with a p99 latency under 1 s, and that the worker's RSS grew less than
the bound the test gives.

The limits, as `ServerConfig` has them by default (python/veter/config.py) and
`src/http2/settings.rs` applies them: 100 concurrent streams, a 16 KiB header
list (the raw block refused at twice that), 32 CONTINUATION frames per block, 200
stream resets and 1000 frames that make no progress per second, 64 KiB of control
frames left unread; and the shell's: a stream's writer paused past 256 KiB of
answer waiting for the client's window, dropped after ``write_timeout`` (30 s),
an idle connection closed after ``keepalive_timeout`` (5 s), a finished one read
for 2 s at most after its GOAWAY, or aborted if its socket takes nothing more.
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from . import h2frames as f
from .processes import ROOT, Proc, children_of, wait_until

# A minute of attacks: on the first Python only, with the other load tests.
pytestmark = [pytest.mark.slow]

MiB = 1 << 20
# How long each attack runs (the zero-window stall runs until the server ends it).
ATTACK_SECONDS = 1.0
# The defaults the tests count on (python/veter/config.py).
MAX_CONCURRENT_STREAMS = 100
MAX_RESETS_PER_SECOND = 200
MAX_CONTROL_FRAMES_PER_SECOND = 1000
MAX_CONTINUATION_FRAMES = 32
MAX_HEADER_LIST_SIZE = 16 * 1024
WRITE_TIMEOUT = 30.0
KEEPALIVE_TIMEOUT = 5.0
# The flood limits count in fixed one-second windows, so a burst straddling two
# windows can reach twice a limit before it trips (src/http2/flood.rs).
WINDOWS = 2
# RSS growth allowed while a flood runs. What one attacking connection can make the
# server hold is bounded by frames (one frame of input, a 32 KiB header block, 64
# KiB of control output) and by 100 streams; 16 MiB is far above that and far below
# what a leak of a few hundred bytes per frame would cost over the ~10^5 frames an
# attack sends.
FLOOD_RSS_BOUND = 16 * MiB

GET = f.request(b"GET", b"/")
SINK = f.request(b"POST", b"/sink")


@dataclass
class Server:
    proc: Proc
    port: int
    worker: int

    def rss(self) -> int:
        with open(f"/proc/{self.worker}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """`veter run` of tests/e2e/apps/h2flood.py with one worker and the defaults."""
    proc = Proc(["run", "tests.e2e.apps.h2flood:app", "--port", "0", "--workers", "1"])
    try:
        port = proc.wait_ready()
        (worker,) = children_of(proc.pid)
        running = Server(proc, port, worker)
        # Warm up: the first requests allocate what every later one reuses.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", http1=False, http2=True) as client:
            for _ in range(50):
                assert client.get("/").status_code == 200
        yield running
    finally:
        proc.close()


def good_client(port: int) -> None:
    """The well-behaved client, run in a process of its own (``python -c``) so that
    the attacker's threads, which hold the test process's GIL, cannot slow it down:
    ``GET /`` again and again on one HTTP/2 connection until its stdin closes. It
    prints "ready" after its first answer, then, at the end, one JSON line: each
    request's latency and what went wrong with any that was not a 200 "hello"."""
    done = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    latencies: list[float] = []
    failures: list[str] = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", http1=False, http2=True, timeout=5) as client:
        while not done.is_set():
            start = time.monotonic()
            try:
                r = client.get("/")
                if r.status_code != 200 or r.text != "hello":
                    failures.append(f"{r.status_code} {r.text[:40]!r}")
            except httpx.HTTPError as exc:
                failures.append(repr(exc))
            latencies.append(time.monotonic() - start)
            if len(latencies) == 1:
                print("ready", flush=True)
    print(json.dumps({"latencies": latencies, "failures": failures}), flush=True)


@dataclass
class Watch:
    """The good client's requests and the worker's RSS while an attack runs."""

    server: Server
    client: subprocess.Popen[str]
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rss_before: int = 0
    rss_peak: int = 0
    started: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    def sampler(self) -> None:
        while not self.stop.wait(0.02):
            self.rss_peak = max(self.rss_peak, self.server.rss())

    def stop_client(self) -> None:
        """Ends the good client, once it has run for ATTACK_SECONDS at least (an attack
        the server ends at once has its aftermath watched as long), and takes its
        results (the RSS sampler goes on)."""
        if self.client.returncode is not None:
            return
        time.sleep(max(0.0, self.started + ATTACK_SECONDS - time.monotonic()))
        out, _ = self.client.communicate(timeout=30)
        assert self.client.returncode == 0, out
        results = json.loads(out.splitlines()[-1])
        self.latencies, self.failures = results["latencies"], results["failures"]

    def check(self, rss_bound: int) -> None:
        """No failed request, p99 under 1 s, RSS grown less than ``rss_bound``."""
        self.stop_client()
        assert self.failures == [], f"the good client failed: {self.failures[:5]}"
        n = len(self.latencies)
        assert n >= 10, f"the good client made only {n} requests"
        p99 = sorted(self.latencies)[int(0.99 * (n - 1))]
        median = statistics.median(self.latencies)
        assert p99 < 1.0, f"good client: p99 {p99:.3f} s, median {median:.4f} s over {n} requests"
        grown = self.rss_peak - self.rss_before
        assert grown < rss_bound, f"worker RSS grew {grown / MiB:.1f} MiB (bound {rss_bound / MiB:.0f})"


@pytest.fixture
def watch(server: Server) -> Iterator[Watch]:
    """Starts the good client and the RSS sampler; the test calls ``check``."""
    code = f"from tests.e2e.test_http2_floods import good_client; good_client({server.port})"
    client = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    w = Watch(server, client)
    sampler = threading.Thread(target=w.sampler, daemon=True)
    try:
        assert client.stdout is not None
        assert client.stdout.readline() == "ready\n", "the good client got no answer before the attack"
        w.rss_before = w.rss_peak = server.rss()
        w.started = time.monotonic()
        sampler.start()
        yield w
    finally:
        w.stop.set()
        if client.returncode is None:
            client.kill()
            client.communicate(timeout=10)
        if sampler.is_alive():
            sampler.join(10)


def repeatedly(attack: Callable[[float], f.Peer], seconds: float = ATTACK_SECONDS) -> list[f.Peer]:
    """Runs ``attack(deadline)`` on new connections until ``seconds`` are up. Each
    attack goes on until its connection is over or its own deadline, ``seconds``
    after it began, and returns its peer, which is closed here."""
    peers = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peer = attack(time.monotonic() + seconds)
        peer.close()
        peers.append(peer)
    return peers


def settle(peer: f.Peer) -> f.Peer:
    """Waits (5 s at most) for the GOAWAY or the end of the connection."""
    peer.wait(lambda: peer.over, 5)
    return peer


def flood(peer: f.Peer, frames: bytes, deadline: float) -> f.Peer:
    """Sends ``frames`` again and again until the connection is over or the deadline."""
    while not peer.over and time.monotonic() < deadline and peer.send(frames):
        pass
    return settle(peer)


def calmed(peers: list[f.Peer]) -> None:
    """Every connection got GOAWAY ENHANCE_YOUR_CALM."""
    assert peers
    for peer in peers:
        assert peer.goaway is not None, f"no GOAWAY (ended: {peer.ended}, send error: {peer.send_error!r})"
        assert peer.goaway.code == f.Code.ENHANCE_YOUR_CALM


def test_rapid_reset(server: Server, watch: Watch) -> None:
    """CVE-2023-44487: HEADERS then RST_STREAM, 50 pairs a write, thousands a second.
    Default h2_max_resets_per_second (200): the 201st reset within a second ends the
    connection with GOAWAY ENHANCE_YOUR_CALM, whose last stream id says how many
    streams were accepted (at most twice the limit, see WINDOWS)."""

    def attack(deadline: float) -> f.Peer:
        peer = f.Peer(server.port)
        first = 1
        while not peer.over and time.monotonic() < deadline:
            streams = range(first, first + 100, 2)
            pairs = (f.headers(s, GET, end_stream=True) + f.rst_stream(s, f.Code.CANCEL) for s in streams)
            if not peer.send(b"".join(pairs)):
                break
            first += 100
        return settle(peer)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        assert peer.goaway is not None
        accepted = (peer.goaway.last_stream + 1) // 2
        assert MAX_RESETS_PER_SECOND < accepted <= WINDOWS * MAX_RESETS_PER_SECOND + 1
    watch.check(FLOOD_RSS_BOUND)


def split(block: bytes, pieces: int) -> list[bytes]:
    """``block`` cut into ``pieces`` non-empty parts."""
    assert len(block) >= pieces
    size, extra = divmod(len(block), pieces)
    cuts = [i * size + min(i, extra) for i in range(pieces + 1)]
    return [block[a:b] for a, b in itertools.pairwise(cuts)]


def header_block(stream: int, pieces: list[bytes]) -> bytes:
    """HEADERS with the first piece, a CONTINUATION for each other, END_HEADERS on the last."""
    frames = [f.headers(stream, pieces[0], end_stream=True, end_headers=len(pieces) == 1)]
    for i, piece in enumerate(pieces[1:], 2):
        frames.append(f.continuation(stream, piece, end_headers=i == len(pieces)))
    return b"".join(frames)


def test_continuation_frames_up_to_the_limit_make_a_request(server: Server) -> None:
    """Default h2_max_continuation_frames (32): a request head in HEADERS and 32
    CONTINUATION frames is answered; with 33 the connection ends with GOAWAY
    ENHANCE_YOUR_CALM, no stream accepted."""
    block = f.request(b"GET", b"/", authority=b"continuation.test")
    peer = f.Peer(server.port)
    peer.send(header_block(1, split(block, 1 + MAX_CONTINUATION_FRAMES)))
    assert peer.wait(lambda: 1 in peer.statuses, 5)
    assert peer.statuses[1] == 200
    peer.send(header_block(3, split(block, 2 + MAX_CONTINUATION_FRAMES)))
    settle(peer)
    peer.close()
    assert peer.goaway is not None and peer.goaway.code == f.Code.ENHANCE_YOUR_CALM
    assert peer.goaway.last_stream == 1
    assert 3 not in peer.statuses


def test_the_http1_request_limits_hold_per_stream(server: Server) -> None:
    """A stream's head is parsed again as HTTP/1.1 by its connection, so the
    HTTP/1.1 limits apply too, at their defaults: 120 small fields (about 5 KiB as
    HPACK counts, well under h2_max_header_list_size) pass max_header_count (100)
    and get 431; a declared body of 20 MB passes max_body_bytes (10 MiB) and gets
    413 before any of it is sent, and the stream is reset NO_ERROR (the client
    stops sending it). The connection goes on."""
    peer = f.Peer(server.port)
    fields = b"".join(f.literal(b"x-field-%d" % i, b"v") for i in range(120))
    declared = SINK + f.literal(b"content-length", b"20000000")
    peer.send(
        f.headers(1, GET + fields, end_stream=True)
        + f.headers(3, declared, end_stream=False)
        + f.headers(5, GET, end_stream=True)
    )
    assert peer.wait(lambda: len(peer.statuses) == 3 and 3 in peer.resets, 5)
    peer.close()
    assert peer.statuses == {1: 431, 3: 413, 5: 200}
    assert peer.resets == {3: f.Code.NO_ERROR}
    assert peer.goaway is None


@pytest.mark.parametrize("fragment", [16, 16 * 1024], ids=["small", "full"])
def test_continuation_flood(server: Server, watch: Watch, fragment: int) -> None:
    """CVE-2024-27316: HEADERS without END_HEADERS, then CONTINUATION frames that
    never end the block, of ``fragment`` bytes (a literal field's value, cut up).
    Defaults: past 32 frames (h2_max_continuation_frames) or past twice
    h2_max_header_list_size of block (32 KiB), GOAWAY ENHANCE_YOUR_CALM; nothing
    of the block is decoded, no stream accepted. Buffered at most: the 32 KiB."""
    value = b"v" * (2 * MAX_HEADER_LIST_SIZE * 4)
    endless = f.literal(b"x-endless", value)

    def attack(deadline: float) -> f.Peer:
        peer = f.Peer(server.port)
        peer.send(f.headers(1, GET, end_stream=True, end_headers=False))
        at = 0
        while not peer.over and time.monotonic() < deadline:
            piece = endless[at % len(endless) : at % len(endless) + fragment]
            if not peer.send(f.continuation(1, piece, end_headers=False)):
                break
            at += fragment
        return settle(peer)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        assert peer.goaway is not None and peer.goaway.last_stream == 0
    watch.check(FLOOD_RSS_BOUND)


def test_hpack_bomb(server: Server, watch: Watch) -> None:
    """A 4000-byte header added to the HPACK dynamic table (4038 bytes of its 4096),
    then blocks that reference it 16,000 times by its 1-byte index: 16 KiB on the
    wire, 64 MB decoded. Default h2_max_header_list_size (16 KiB): decoding stops
    emitting at the limit but runs to the block's end (the table stays in step), and
    each such request is answered 431; the connection goes on, and a plain request
    after the bombs is answered 200."""
    peer = f.Peer(server.port)
    peer.send(f.headers(1, GET + f.literal_indexed(b"x-bomb", b"b" * 4000), end_stream=True))
    assert peer.wait(lambda: 1 in peer.statuses, 5)
    assert peer.statuses[1] == 200
    bomb = GET + f.indexed(f.FIRST_DYNAMIC) * 16_000
    assert len(bomb) <= 16 * 1024
    stream = 3
    deadline = time.monotonic() + ATTACK_SECONDS
    while time.monotonic() < deadline:
        assert peer.send(f.headers(stream, bomb, end_stream=True)), peer.send_error
        stream += 2
    last_bomb = stream - 2
    peer.send(f.headers(stream, GET, end_stream=True))
    assert peer.wait(lambda: stream in peer.statuses, 10), f"no answer ({peer.goaway}, {peer.ended})"
    peer.close()
    assert not peer.over, f"the connection ended: {peer.goaway}, {peer.ended}"
    bombs = range(3, last_bomb + 1, 2)
    assert len(bombs) > 1000
    assert {peer.statuses.get(s) for s in bombs} == {431}
    assert peer.statuses[stream] == 200
    assert peer.resets == {}
    watch.check(FLOOD_RSS_BOUND)


def test_settings_flood(server: Server, watch: Watch) -> None:
    """SETTINGS frames (each acknowledged by the server) as fast as the socket
    takes them. Default h2_max_control_frames_per_second (1000): the 1001st frame
    that makes no progress within a second (the client's first SETTINGS counts)
    ends the connection with GOAWAY ENHANCE_YOUR_CALM."""
    frames = f.settings((f.Setting.INITIAL_WINDOW_SIZE, 65535)) * 50

    def attack(deadline: float) -> f.Peer:
        return flood(f.Peer(server.port), frames, deadline)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        acks = peer.frames[f.Type.SETTINGS] - 1  # the server's own SETTINGS
        assert MAX_CONTROL_FRAMES_PER_SECOND <= acks <= WINDOWS * MAX_CONTROL_FRAMES_PER_SECOND
    watch.check(FLOOD_RSS_BOUND)


def test_ping_flood(server: Server, watch: Watch) -> None:
    """PING frames as fast as the socket takes them, the acks read. Default
    h2_max_control_frames_per_second (1000): GOAWAY ENHANCE_YOUR_CALM, after
    fewer than 1000 acks in the first second (the client's SETTINGS counted)."""

    def attack(deadline: float) -> f.Peer:
        return flood(f.Peer(server.port), f.ping() * 50, deadline)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        acks = peer.frames[f.Type.PING]
        assert MAX_CONTROL_FRAMES_PER_SECOND - 1 <= acks <= WINDOWS * MAX_CONTROL_FRAMES_PER_SECOND
    watch.check(FLOOD_RSS_BOUND)


def test_ping_flood_from_a_client_that_never_reads(server: Server, watch: Watch) -> None:
    """PINGs as fast as the socket takes them, for the whole attack, from a client
    that never reads meanwhile (a 4 KiB receive buffer, full at once). Defaults: the
    control-frame limit (1000 a second) ends the connection in the first second
    with GOAWAY ENHANCE_YOUR_CALM; the server then half-closes and reads (and
    drops) what still comes, for 2 s and linger_bytes (4 MiB) at most, then cuts the
    connection, which resets it when more is still coming (the client then loses
    what it had not read, the GOAWAY too, as an HTTP/1.1 client past its linger
    does); and when the socket takes nothing more (its buffer full of acks) the
    GOAWAY cannot be written at all and the connection is aborted. Read at the end:
    the acks of fewer than 2000 PINGs, and the GOAWAY or the connection's end."""
    peer = f.Peer(server.port, reading=False, rcvbuf=4096)
    deadline = time.monotonic() + ATTACK_SECONDS
    while time.monotonic() < deadline and peer.send(f.ping() * 50):
        pass
    peer.start_reading()
    assert peer.wait_ended(5)
    peer.close()
    if peer.goaway is not None:
        assert peer.goaway.code == f.Code.ENHANCE_YOUR_CALM
    else:
        assert peer.ended in ("reset", "eof"), peer.ended
    assert peer.frames[f.Type.PING] <= WINDOWS * MAX_CONTROL_FRAMES_PER_SECOND
    watch.check(FLOOD_RSS_BOUND)


def server_socket(server_port: int, client_port: int) -> tuple[str, int] | None:
    """The state and the send queue's bytes of the server's side of the connection
    from ``client_port`` (/proc/net/tcp), or None once it is gone."""
    local, remote = f":{server_port:04X}", f":{client_port:04X}"
    with open("/proc/net/tcp") as fh:
        next(fh)
        for line in fh:
            fields = line.split()
            if fields[1].endswith(local) and fields[2].endswith(remote):
                return fields[3], int(fields[4].split(":")[0], 16)
    return None


def server_closed(server_port: int, client_port: int) -> bool:
    """The server closed its side (neither 01 ESTABLISHED nor 08 CLOSE_WAIT), or it is gone."""
    found = server_socket(server_port, client_port)
    return found is None or found[0] not in ("01", "08")


def stuffed(server: Server) -> f.Peer:
    """A client that opens its windows wide (2^31 - 1), asks for 64 MiB and never
    reads: once this returns, the server's socket holds more than 1 MiB it cannot
    send, so whatever the server writes next waits in the transport's buffer."""
    peer = f.Peer(server.port, ((f.Setting.INITIAL_WINDOW_SIZE, (1 << 31) - 1),), reading=False, rcvbuf=4096)
    big = f.headers(1, f.request(b"GET", b"/big"), end_stream=True)
    peer.send(f.window_update(0, (1 << 31) - 1 - 65535) + big)
    client_port = peer.sock.getsockname()[1]

    def full() -> bool:
        found = server_socket(server.port, client_port)
        return found is not None and found[1] > MiB

    wait_until(full, 5)
    return peer


def test_pings_under_the_rate_limit_from_a_client_that_never_reads(server: Server, watch: Watch) -> None:
    """A client that opens its windows wide, asks for 64 MiB (which fills the
    socket's buffers, so nothing more leaves the server) and never reads, then sends
    900 PINGs a second, under the flood limit, for 4.8 s: 4320 acks of 17 bytes, 73.4
    KB, past the default h2_max_queued_control_bytes (64 KiB) of control frames left
    unread. Documented: GOAWAY ENHANCE_YOUR_CALM, and since the socket takes
    nothing more the connection is aborted: the client's sends fail (or its socket
    ends), and it never gets the acks of all its PINGs. (Before 4052e3a the acks
    piled up in the transport's buffer for as long as the PINGs came.)"""
    peer = stuffed(server)
    start = time.monotonic()
    batch = f.ping() * 90
    for k in range(48):
        # One batch every 0.1 s: at most 990 PINGs in any second.
        time.sleep(max(0.0, start + k * 0.1 - time.monotonic()))
        if not peer.send(batch):
            break
    all_sent = peer.send_error is None
    peer.start_reading()
    peer.wait(lambda: peer.over, 2)
    peer.close()
    watch.check(FLOOD_RSS_BOUND)
    assert not all_sent or peer.ended is not None, f"the connection is still open (GOAWAY {peer.goaway})"
    assert peer.goaway is None or peer.goaway.code == f.Code.ENHANCE_YOUR_CALM
    assert peer.frames.get(f.Type.PING, 0) < 48 * len(batch) // len(f.ping())


# How long a finished HTTP/2 connection reads (and drops) after its half-close,
# at most, before it closes (LINGER in src/protocol/h2/session.rs).
LINGER = 2.0


def test_a_finished_connection_is_closed_even_if_its_client_never_reads(server: Server, watch: Watch) -> None:
    """A client that opens its windows wide, asks for 64 MiB (which fills the
    socket's buffers: nothing more leaves the server) and never reads, then floods
    PINGs for the attack's time. Defaults: the control-frame limit ends the
    connection in its first second. Its GOAWAY cannot reach the client, which does
    not read, so the server aborts the socket at once (a connection that finishes
    with its socket taking bytes half-closes and reads for 2 s at most instead):
    within those 2 s (and a tick) of the flood's end, /proc/net/tcp shows the
    server's side closed or gone. (Before 4052e3a it stayed open, its buffers
    full, until the client left.)"""
    peer = stuffed(server)
    client_port = peer.sock.getsockname()[1]
    deadline = time.monotonic() + ATTACK_SECONDS
    while time.monotonic() < deadline and peer.send(f.ping() * 50):
        pass
    try:
        wait_until(lambda: server_closed(server.port, client_port), LINGER + 1)
    finally:
        peer.close()
    watch.check(FLOOD_RSS_BOUND)


def test_empty_data_flood(server: Server, watch: Watch) -> None:
    """DATA frames without a byte and without END_STREAM on an open request
    (``POST /sink``, which reads its body). Default h2_max_control_frames_per_second
    (1000): GOAWAY ENHANCE_YOUR_CALM, the stream accepted (last stream 1)."""

    def attack(deadline: float) -> f.Peer:
        peer = f.Peer(server.port)
        peer.send(f.headers(1, SINK, end_stream=False))
        return flood(peer, f.data(1, b"", end_stream=False) * 100, deadline)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        assert peer.goaway is not None and peer.goaway.last_stream == 1
    watch.check(FLOOD_RSS_BOUND)


def test_streams_over_the_concurrency_limit(server: Server, watch: Watch) -> None:
    """Default h2_max_concurrent_streams (100): 100 requests whose bodies never
    end (``POST /sink``) are accepted, the 101st stream is reset REFUSED_STREAM; once
    one of the 100 ends, a new stream is served. Then new streams as fast as the
    socket takes them: each refused, and each refusal counts against
    h2_max_control_frames_per_second (1000), so GOAWAY ENHANCE_YOUR_CALM."""

    def attack(deadline: float) -> f.Peer:
        peer = f.Peer(server.port)
        peer.send(b"".join(f.headers(s, SINK, end_stream=False) for s in range(1, 200, 2)))
        over = 2 * MAX_CONCURRENT_STREAMS + 1
        peer.send(f.headers(over, SINK, end_stream=False))
        assert peer.wait(lambda: over in peer.resets, 5)
        assert peer.resets == {over: f.Code.REFUSED_STREAM}
        peer.send(f.data(1, b"x", end_stream=True))
        assert peer.wait(lambda: 1 in peer.statuses, 5)
        peer.send(f.headers(over + 2, SINK, end_stream=False) + f.data(over + 2, b"yy", end_stream=True))
        assert peer.wait(lambda: over + 2 in peer.statuses, 5)
        assert peer.statuses == {1: 200, over + 2: 200}
        first = over + 4
        while not peer.over and time.monotonic() < deadline:
            streams = range(first, first + 100, 2)
            if not peer.send(b"".join(f.headers(s, GET, end_stream=True) for s in streams)):
                break
            first += 100
        return settle(peer)

    peers = repeatedly(attack)
    calmed(peers)
    for peer in peers:
        refused = [s for s, code in peer.resets.items() if code == f.Code.REFUSED_STREAM]
        assert len(refused) == len(peer.resets)
        # The control frames counted: the client's SETTINGS and the refusals.
        assert MAX_CONTROL_FRAMES_PER_SECOND - 1 <= len(refused) <= WINDOWS * MAX_CONTROL_FRAMES_PER_SECOND
    watch.check(FLOOD_RSS_BOUND)


# The answer bytes a stalled stream can make the server hold: its writer is paused
# once more than 256 KiB wait for the client's window (HIGH_MARK in
# src/protocol/h2/link.rs), after the 64 KiB piece that passed the mark.
STALLED_STREAM_BYTES = 256 * 1024 + 64 * 1024


def test_zero_window_stall(server: Server, watch: Watch) -> None:
    """A client that sets SETTINGS_INITIAL_WINDOW_SIZE 0, asks for 64 MiB streamed
    (``GET /big``) on 100 streams (the default h2_max_concurrent_streams), reads
    everything but never sends WINDOW_UPDATE, and keeps the connection open.

    Defaults: each answer's head goes out and no DATA; each stream's writer is
    paused once 256 KiB wait, so the server holds at most 100 x 320 KiB (31.25 MiB)
    of answers: the worker's RSS grows less than 50 MiB. After write_timeout (30 s)
    of its writer paused each stream is reset (INTERNAL_ERROR); the connection,
    then idle for longer than keepalive_timeout (5 s: the client sent nothing since
    its requests), is closed with GOAWAY NO_ERROR at the next tick (0.25 s)."""
    peer = f.Peer(server.port, ((f.Setting.INITIAL_WINDOW_SIZE, 0),))
    big = f.request(b"GET", b"/big")
    streams = range(1, 2 * MAX_CONCURRENT_STREAMS, 2)
    peer.send(b"".join(f.headers(s, big, end_stream=True) for s in streams))
    asked = time.monotonic()
    assert peer.wait(lambda: len(peer.statuses) == len(streams), 5)
    watch.stop_client()  # after ATTACK_SECONDS of requests beside the stall
    assert peer.wait(lambda: len(peer.resets) == len(streams), WRITE_TIMEOUT + 5)
    reset = time.monotonic() - asked
    assert peer.wait_ended(KEEPALIVE_TIMEOUT)
    assert peer.ended_at is not None
    closed = peer.ended_at - asked
    peer.close()
    assert set(peer.statuses.values()) == {200}
    assert peer.data_bytes == {}
    assert set(peer.resets.values()) == {f.Code.INTERNAL_ERROR}
    assert WRITE_TIMEOUT - 0.5 < reset < WRITE_TIMEOUT + 2, reset
    assert peer.goaway is not None and peer.goaway.code == f.Code.NO_ERROR
    assert closed - reset < 1.0, (reset, closed)
    watch.check(len(streams) * STALLED_STREAM_BYTES + 18 * MiB)
