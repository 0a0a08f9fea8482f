"""The access log over real sockets: its formats, and several workers writing one file
through rotations without losing, tearing or repeating a line."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

import veter
from veter import health

from .conftest import RunningServer, read_responses
from .processes import Proc, children_of

TEXT = re.compile(
    r'^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<client>\S+) "(?P<method>\S+) (?P<target>\S+) '
    r'(?P<version>\S+)" (?P<status>\d{3}) (?P<bytes>\d+) (?P<ms>\d+\.\d{3}) (?P<rid>\S+)$'
)


def app_with_routes() -> veter.App:
    app = veter.App()
    health.enable(app)

    @app.get("/items/{n:int}")
    async def item(request: veter.Request, n: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": n}

    return app


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines()


def exchange(running: RunningServer, raw: bytes, count: int) -> None:
    with running.connect() as sock:
        sock.sendall(raw)
        read_responses(sock, count)


def test_text_lines(serve: Callable[..., RunningServer], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    running = serve(app_with_routes(), access_log=str(path))
    exchange(
        running,
        b"GET /items/7?q=%22x HTTP/1.1\r\nHost: a\r\nX-Request-ID: rid-1\r\n\r\n"
        b"HEAD /items/8 HTTP/1.1\r\nHost: a\r\n\r\n"
        b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
        b'GET /nope"x HTTP/1.1\r\nHost: a\r\n\r\n',
        4,
    )
    with running.connect() as sock:  # a malformed request is logged too
        sock.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n")
        read_responses(sock, 1)
    running.stop()
    lines = lines_of(path)
    assert len(lines) == 4, lines  # the health probe is left out
    # Lines come in the order responses were made (the 404 does not wait for the
    # handlers' sleep), so pick them by content.
    matches = [TEXT.match(line) for line in lines]
    assert all(matches), lines
    by_target = {m["target"]: m for m in matches if m}
    first, head = by_target["/items/7?q=%22x"], by_target["/items/8"]
    missing, bad = by_target["/nope\\x22x"], by_target["-"]
    assert first and first["method"] == "GET" and first["target"] == "/items/7?q=%22x"
    assert first["status"] == "200" and first["bytes"] == str(len(b'{"n":7}')) and first["rid"] == "rid-1"
    assert first["client"] == "127.0.0.1" and first["version"] == "HTTP/1.1"
    # uvloop counts a timer from the time cached when the loop iteration began, with
    # millisecond rounding, so a 10 ms sleep may end up to 1 ms early on a real clock.
    assert float(first["ms"]) >= 9.0, "the duration covers the handler's 10 ms sleep"
    assert (
        head
        and head["method"] == "HEAD"
        and head["bytes"] == "0"
        and re.fullmatch(r"[0-9a-f]{32}", head["rid"])
    )
    assert missing and missing["status"] == "404" and missing["target"] == "/nope\\x22x"
    assert bad and bad["status"] == "400" and bad["method"] == "-" and bad["rid"] == "-"


def test_json_lines_template_and_health(serve: Callable[..., RunningServer], tmp_path: Path) -> None:
    as_json = tmp_path / "json.log"
    running = serve(
        app_with_routes(), access_log=str(as_json), access_log_format="json", access_log_health=True
    )
    exchange(
        running, b'GET /items/1?a="b" HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz HTTP/1.1\r\nHost: a\r\n\r\n', 2
    )
    running.stop()
    item, probe = sorted((orjson.loads(line) for line in lines_of(as_json)), key=lambda d: d["target"])
    assert item["target"] == '/items/1?a="b"' and item["status"] == 200 and item["pid"] == os.getpid()
    assert set(item) == {
        "time",
        "client",
        "method",
        "target",
        "version",
        "request_id",
        "status",
        "bytes",
        "duration_ms",
        "pid",
    }
    assert probe["target"] == "/readyz", "health probes are logged when asked"

    custom = tmp_path / "custom.log"
    running = serve(
        app_with_routes(), access_log=str(custom), access_log_format="{method} {target} -> {status}"
    )
    exchange(running, b"GET /items/2 HTTP/1.1\r\nHost: a\r\n\r\n", 1)
    running.stop()
    assert lines_of(custom) == ["GET /items/2 -> 200"]


@pytest.mark.parametrize("interval", [0, 0.05])
def test_a_line_is_written_when_the_loop_goes_idle(
    serve: Callable[..., RunningServer], tmp_path: Path, interval: float
) -> None:
    """No request follows the last one: its line is written all the same, at the end
    of its loop iteration (interval 0) or once the interval has passed."""
    path = tmp_path / "access.log"
    running = serve(app_with_routes(), access_log=str(path), log_flush_interval=interval)
    exchange(running, b"GET /items/3 HTTP/1.1\r\nHost: a\r\n\r\n", 1)
    deadline = time.monotonic() + 5
    while not path.read_bytes().endswith(b"\n") and time.monotonic() < deadline:
        time.sleep(0.005)  # polled: the server's own timer decides when it is written
    lines = lines_of(path)
    assert len(lines) == 1 and TEXT.match(lines[0]), lines
    running.stop()
    assert lines_of(path) == lines


def test_buffered_lines_are_written_on_a_graceful_stop(
    serve: Callable[..., RunningServer], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    # An interval no test waits for: only the stop writes the lines.
    running = serve(app_with_routes(), access_log=str(path), log_flush_interval=60)
    exchange(running, b"GET /items/4 HTTP/1.1\r\nHost: a\r\n\r\n" * 3, 3)
    assert path.read_bytes() == b""
    running.stop()
    lines = lines_of(path)
    assert len(lines) == 3 and all(TEXT.match(line) for line in lines), lines


def test_bad_formats_are_refused() -> None:
    app = app_with_routes()
    with pytest.raises(ValueError, match="access_log_format"):
        app.config.with_(access_log_format="xml")
    from veter.logs import open_log

    with pytest.raises(ValueError, match=r"unknown field \{nope\}"):
        app.build_dispatcher(app.config.with_(access_log_format="{nope}"), access_log=open_log(os.devnull))


# -- several workers, one file, rotations ------------------------------------------------

REQUESTS = 100_000
CONNECTIONS = 16
BATCH = 5


async def _send_all(port: int) -> int:
    """Sends REQUESTS pipelined requests (`/?n=<i>`, each i once) over CONNECTIONS
    connections; returns how many 200 answers came back."""
    per_conn = REQUESTS // CONNECTIONS
    assert per_conn * CONNECTIONS == REQUESTS and per_conn % BATCH == 0
    marker = b"HTTP/1.1 200 OK\r\n"

    async def one(conn: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answered = 0
        for start in range(conn * per_conn, (conn + 1) * per_conn, BATCH):
            writer.write(
                b"".join(b"GET /?n=%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(start, start + BATCH))
            )
            seen, data = 0, b""
            while seen < BATCH:
                chunk = await reader.read(1 << 16)
                assert chunk, "server closed the connection"
                data += chunk
                seen = data.count(marker)
            answered += seen
        writer.close()
        await writer.wait_closed()
        return answered

    results = await asyncio.wait_for(asyncio.gather(*(one(c) for c in range(CONNECTIONS))), 240)
    return sum(results)


@pytest.fixture
def master_proc() -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    yield procs
    for proc in procs:
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


@pytest.mark.timeout(300)
def test_four_workers_100k_lines_through_rotations(master_proc: list[Proc], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    # SO_REUSEPORT: the kernel spreads the connections over the 4 workers by hash (on
    # one shared socket the first worker to wake may accept all 16 at once).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    proc = Proc(
        [
            "run",
            "tests.e2e.apps.logged:app",
            "--port",
            str(free_port),
            "--reuse-port",
            "--workers",
            "4",
            "--access-log",
            str(path),
            "--log-max-bytes",
            "100000",
            "--log-backups",
            "1000",
        ]
    )
    master_proc.append(proc)
    port = proc.wait_ready()
    start = 0
    for _ in range(4):
        match = proc.wait_for(r"worker \d+ ready", start=start)
        start = proc.lines.index(match.string) + 1
    assert asyncio.run(_send_all(port)) == REQUESTS
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.proc.wait(60) == 0, proc.output()

    files = sorted(tmp_path.glob("access.log*"))
    # How many rotations happen is how many of the master's checks (every 0.1 s,
    # when its loop gets the CPU beside 4 busy workers) fall in the run: 3 on
    # Python 3.14, which serves the 100k requests faster (a run with no current
    # access.log left: the last rotation came after the last line). Two rotations
    # at least make the lines cross rotations.
    rotated = [f for f in files if f.name != "access.log"]
    assert len(rotated) >= 2, f"expected several rotations, got {[f.name for f in files]}"
    seen: set[int] = set()
    writers: set[str] = set()
    total = 0
    for file in files:
        data = file.read_bytes()
        assert not data or data.endswith(b"\n"), f"{file.name} ends mid-line"
        for line in data.decode().splitlines():
            total += 1
            match = TEXT.match(line)
            assert match, f"torn or malformed line in {file.name}: {line!r}"
            assert match["status"] == "200"
            writers.add(match["rid"][:16])  # a generated id starts with its process's prefix
            n = int(match["target"].removeprefix("/?n="))
            assert n not in seen, f"request {n} logged twice"
            seen.add(n)
    assert total == REQUESTS and seen == set(range(REQUESTS))
    assert len(writers) >= 2, "several workers wrote to the file"
