"""Every corpus case against a real veter server over a real socket.

For each case the bytes go out in one ``sendall``; the answers must be, in order, an
echo of every request the case says is accepted, then the rejection's status (with
``Connection: close``) if there is one, and the connection must close after a
rejection or a request that does not keep it alive, with nothing else sent. The
handler log proves that nothing after a rejected request reached a handler. A case
that leaves the connection open is followed by a probe request (in the same write),
which must be answered as the next request: no stray byte was left behind. (With
limits too small for the probe, the client half-closes instead.)
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import veter
from veter.testing import TestResponse, _ResponseReader

from ..e2e.conftest import RunningServer, wait_closed
from .cases import Case, Incomplete, Reject, Request, load

Serve = Callable[..., RunningServer]

PROBE = b"GET /__probe HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _routable_method(method: str) -> bool:
    # Route methods are upper-case tokens of letters, digits, '-' and '_'.
    return method.isupper() and method.replace("-", "").replace("_", "").isalnum()


#: Every method a corpus case expects the server to accept and route.
METHODS = sorted(
    {r.method for c in load() for r in c.accepted if _routable_method(r.method) and r.method != "HEAD"}
    | {"GET"}
)


def route_path(target: str) -> str:
    """The path veter routes on (see request.rs split_target)."""
    if not target.startswith("/") and "://" in target:
        after = target.index("://") + 3
        ends = [i for i in (target.find("/", after), target.find("?", after)) if i >= 0]
        target = target[min(ends) :] if ends else ""
    return target.split("?", 1)[0]


def echoed(request: Request) -> bool:
    """Whether the echo handler runs for this request (others get 404 or 405).
    HEAD runs the GET handler; its answer has no body to compare."""
    method_ok = request.method in METHODS or request.method == "HEAD"
    return method_ok and route_path(request.target).startswith("/")


def make_app(log: list[tuple[str, str]]) -> veter.App:
    app = veter.App()

    async def echo(request: veter.Request, **params: Any) -> dict[str, Any]:
        log.append((request.method, request.target))
        body = await request.body()
        return {
            "method": request.method,
            "target": request.target,
            "version": request.http_version,
            "headers": request.headers.multi_items(),
            "body": body.decode("latin-1"),
        }

    app.add_route("/", echo, methods=METHODS)
    app.add_route("/{rest:path}", echo, methods=METHODS)
    return app


class Servers:
    """One server per set of limits, shared by the cases that use it."""

    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        self.log: list[tuple[str, str]] = []
        self.running: dict[tuple[tuple[str, int], ...], RunningServer] = {}

    def for_case(self, case: Case) -> RunningServer:
        key = tuple(sorted(case.limits.items()))
        if key not in self.running:
            self.running[key] = self.serve(make_app(self.log), **case.limits)
        return self.running[key]


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    # The e2e `serve` fixture is per test; here one server per limits serves many
    # cases, with the same leak checks when the module ends.
    from ..e2e.conftest import assert_no_fd_leak, open_fds

    started: list[tuple[RunningServer, int]] = []

    def start(app: veter.App, **settings: Any) -> RunningServer:
        fds = open_fds()
        # The corpus is HTTP/1.1's: its h2c upgrade case (upgrade/h2c) checks how
        # such a request is read and served when the upgrade is declined. The
        # upgrade itself is tests/e2e/test_http2.py's.
        settings.setdefault("h2c_upgrade", False)
        running = RunningServer(app, app.config.with_(host="127.0.0.1", port=0, **settings)).start()
        started.append((running, fds))
        return running

    yield Servers(start)
    for running, _fds in started:
        running.stop()
        assert running.server is not None and running.server.dispatcher is not None
        assert running.server.dispatcher.connection_count == 0, "connections leaked"
        assert running.leftover_tasks == [], f"tasks leaked: {running.leftover_tasks}"
    if started:
        assert_no_fd_leak(started[0][1])


def send_all(sock: socket.socket, data: bytes) -> None:
    """Sends what the server takes; a server that refused the request may close
    (and reset) before a large input is all sent, which is its right."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(data)


def check_echo(case: Case, request: Request, got: TestResponse) -> None:
    if not echoed(request):
        # Accepted by the parser, answered by the router (an unroutable method or
        # target): not a rejection, and no handler ran.
        assert got.status in (404, 405), f"{case.name}: {got.status}"
        return
    assert got.status == 200, f"{case.name}: {got.status} {got.content!r}"
    if request.method == "HEAD":
        return
    assert got.json() == {
        "method": request.method,
        "target": request.target,
        "version": request.version,
        "headers": [list(h) for h in request.headers],
        "body": request.body.decode("latin-1"),
    }, case.name


def read_until_closed(sock: socket.socket, heads: list[bool]) -> tuple[list[TestResponse], bytes]:
    """Everything the server sends until it closes, as responses (interim 100s
    skipped) and the bytes left over after ``len(heads)`` of them."""
    try:
        data = wait_closed(sock)
    except ConnectionResetError:
        data = b""
    responses = []
    for head in heads:
        parsed = _ResponseReader(head).parse(data, True)
        if parsed is None:
            break
        responses.append(parsed[0])
        data = data[parsed[1] :]
    return responses, data.replace(CONTINUE, b"")


@pytest.mark.parametrize("case", load(), ids=lambda c: c.name)
def test_case_over_a_socket(servers: Servers, case: Case) -> None:
    server = servers.for_case(case)
    servers.log.clear()
    last = case.expect[-1]
    closes = isinstance(last, Reject | Incomplete) or (isinstance(last, Request) and not last.keep_alive)
    answers = [o for o in case.expect if not isinstance(o, Incomplete)]
    heads = [isinstance(o, Request) and o.method == "HEAD" for o in answers]
    # A case that leaves the connection open is followed by the probe, which closes
    # it, unless its limits are too small for the probe: then the client half-closes.
    probing = not closes and not {"max_start_line", "max_header_bytes", "max_header_count"} & set(case.limits)
    with server.connect() as sock:
        send_all(sock, case.raw + PROBE if probing else case.raw)
        if (not closes and not probing) or isinstance(last, Incomplete):
            sock.shutdown(socket.SHUT_WR)
        responses, rest = read_until_closed(sock, [*heads, False])
    assert rest == b"", f"{case.name}: bytes after the last answer: {rest[:200]!r}"
    assert len(responses) == len(answers) + probing, f"{case.name}: {responses}"
    for outcome, got in zip(answers, responses, strict=False):
        if isinstance(outcome, Reject):
            assert got.status == outcome.status, f"{case.name}: {got.status} {got.content!r}"
            assert got.headers["connection"] == "close", case.name
        else:
            assert isinstance(outcome, Request)
            check_echo(case, outcome, got)
            if not outcome.keep_alive:
                assert got.headers["connection"] == "close", case.name
    probed = []
    if probing:
        probe = responses[-1]
        assert probe.status == 200 and probe.json()["target"] == "/__probe", case.name
        probed = [("GET", "/__probe")]
    expected_log = [(r.method, r.target) for r in case.accepted if echoed(r)] + probed
    assert servers.log == expected_log, f"{case.name}: handlers ran for {servers.log}"
