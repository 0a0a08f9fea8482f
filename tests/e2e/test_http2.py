"""HTTP/2 end to end with the clients users have: httpx (h2c by prior knowledge and
h2 over TLS), curl, and a raw client (the `h2` package) where a test needs frame by
frame control. Native handlers here; hosted apps in tests/hosted/test_http2.py."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import httpx
import pytest

import veter

from .conftest import RunningServer
from .test_tls import cert  # noqa: F401  (the module's certificate fixture)


def app() -> veter.App:
    app = veter.App()

    @app.get("/")
    def hello(request: veter.Request) -> str:
        return "hello"

    @app.get("/json")
    def as_json(request: veter.Request) -> dict[str, object]:
        return {"version": request.http_version, "query": dict(request.query)}

    @app.post("/echo")
    async def echo(request: veter.Request) -> veter.Response:
        body = await request.body()
        return veter.Response(body, headers={"x-length": str(len(body))})

    @app.get("/headers")
    def headers(request: veter.Request) -> dict[str, object]:
        return {"cookie": request.header("cookie"), "host": request.header("host")}

    @app.get("/slow")
    async def slow(request: veter.Request) -> str:
        await asyncio.sleep(0.2)
        return "slow"

    @app.get("/stream")
    def stream(request: veter.Request) -> veter.StreamingResponse:
        def parts() -> Iterator[bytes]:
            for i in range(5):
                yield f"part {i}\n".encode()

        return veter.StreamingResponse(parts(), content_type="text/plain")

    @app.get("/big")
    def big(request: veter.Request) -> bytes:
        return b"x" * (3 << 20)

    return app


@pytest.fixture
def server(serve: Callable[..., RunningServer]) -> RunningServer:
    return serve(app())


def h2c_client(port: int) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", http1=False, http2=True, timeout=10)


def test_h2c_by_prior_knowledge_serves_native_handlers(server: RunningServer) -> None:
    with h2c_client(server.port) as client:
        r = client.get("/")
        assert (r.http_version, r.status_code, r.text) == ("HTTP/2", 200, "hello")
        assert r.headers["content-type"].startswith("text/plain")
        r = client.get("/json", params={"a": "1"})
        assert r.json() == {"version": "2", "query": {"a": "1"}}
        body = bytes(range(256)) * 400
        r = client.post("/echo", content=body)
        assert r.status_code == 200 and r.content == body and r.headers["x-length"] == str(len(body))
        r = client.post("/echo", content=iter([b"chunk one ", b"chunk two"]))  # no content-length
        assert r.content == b"chunk one chunk two"
        r = client.head("/")
        assert r.status_code == 200 and r.content == b""
        assert client.get("/missing").status_code == 404


def test_streams_are_multiplexed_and_answered_out_of_order(server: RunningServer) -> None:
    async def run() -> list[str]:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{server.port}", http1=False, http2=True, timeout=10
        ) as client:
            slow = asyncio.ensure_future(client.get("/slow"))
            fast = [await client.get("/") for _ in range(20)]
            assert not slow.done(), "a slow stream held the others back"
            many = await asyncio.gather(*(client.get("/json", params={"i": str(i)}) for i in range(60)))
            assert [r.json()["query"]["i"] for r in many] == [str(i) for i in range(60)]
            return [r.text for r in fast] + [(await slow).text]

    texts = asyncio.run(run())
    assert texts == ["hello"] * 20 + ["slow"]


def test_streamed_answers_and_flow_control(server: RunningServer) -> None:
    with h2c_client(server.port) as client:
        r = client.get("/stream")
        assert r.text == "".join(f"part {i}\n" for i in range(5))
        # 3 MiB is far past the client's 64 KiB initial window: sent as it opens.
        r = client.get("/big")
        assert len(r.content) == 3 << 20


def test_split_cookies_are_joined_and_authority_is_the_host(server: RunningServer) -> None:
    conn = RawH2(server.port)
    stream = conn.request(
        [(":method", "GET"), (":path", "/headers"), (":scheme", "http"), (":authority", "example.test"),
         ("cookie", "a=1"), ("cookie", "b=2")]
    )  # fmt: skip
    status, _, body = conn.answer(stream)
    conn.close()
    assert status == 200
    assert json.loads(body) == {"cookie": "a=1; b=2", "host": "example.test"}


def test_an_http1_client_on_the_same_port_is_served_as_before(server: RunningServer) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as client:
        r = client.get("/json")
        assert r.http_version == "HTTP/1.1" and r.json()["version"] == "1.1"


def test_http2_off_answers_the_preface_as_http1(serve: Callable[..., RunningServer]) -> None:
    running = serve(app(), http2=False)
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        data = sock.recv(100)
    assert data.startswith(b"HTTP/1.1 ")


def test_h2_over_tls_by_alpn(serve: Callable[..., RunningServer], cert: tuple[Path, Path]) -> None:  # noqa: F811
    running = serve(app(), ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[1]))
    with httpx.Client(
        base_url=f"https://127.0.0.1:{running.port}",
        http2=True,
        verify=ssl.create_default_context(cafile=str(cert[0])),
        timeout=10,
    ) as client:
        r = client.get("/json")
        assert r.http_version == "HTTP/2" and r.json()["version"] == "2"
        assert client.post("/echo", content=b"x" * 100_000).content == b"x" * 100_000


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(serve: Callable[..., RunningServer], cert: tuple[Path, Path]) -> None:  # noqa: F811
    plain = serve(app())
    out = subprocess.run(
        ["curl", "-s", "--http2-prior-knowledge", "-w", " %{http_version}", f"http://127.0.0.1:{plain.port}/"],
        capture_output=True, check=True, timeout=20,
    ).stdout  # fmt: skip
    assert out == b"hello 2"
    tls = serve(app(), ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[1]))
    out = subprocess.run(
        ["curl", "-s", "--http2", "--cacert", str(cert[0]), "-d", "posted", "-w", " %{http_version}",
         f"https://127.0.0.1:{tls.port}/echo"],
        capture_output=True, check=True, timeout=20,
    ).stdout  # fmt: skip
    assert out == b"posted 2"


def test_upgrade_h2c_answers_the_request_on_stream_1(serve: Callable[..., RunningServer]) -> None:
    running = serve(app())
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    settings = conn.initiate_upgrade_connection()
    with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
        sock.sendall(
            b"GET /json?a=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
            b"Upgrade: h2c\r\nHTTP2-Settings: " + settings + b"\r\n\r\n"
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(4096)
        head, rest = data.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101 ") and b"Upgrade: h2c" in head
        sock.sendall(conn.data_to_send())
        events = list(conn.receive_data(rest)) if rest else []
        body, ended = b"", False
        while not ended:
            for event in events:
                if isinstance(event, h2.events.DataReceived):
                    body += event.data
                ended |= isinstance(event, h2.events.StreamEnded) and event.stream_id == 1
            if not ended:
                events = list(conn.receive_data(sock.recv(65536)))
                sock.sendall(conn.data_to_send())
    assert json.loads(body) == {"version": "2", "query": {"a": "1"}}


@pytest.mark.parametrize("upgrade_on", [True, False])
def test_upgrade_h2c_is_declined_for_a_body_or_when_off(
    serve: Callable[..., RunningServer], upgrade_on: bool
) -> None:
    running = serve(app(), h2c_upgrade=upgrade_on)
    asks = b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n"
    requests = [b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n" + asks + b"\r\nhi"]
    if not upgrade_on:
        requests.append(b"GET / HTTP/1.1\r\nHost: x\r\n" + asks + b"\r\n")
    for request in requests:
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
            sock.sendall(request)
            answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200 "), answer


class RawH2:
    """A blocking HTTP/2 client over the `h2` package, frame by frame."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.events: list[h2.events.Event] = []

    def request(self, headers: list[tuple[str, str]], body: bytes | None = None) -> int:
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, headers, end_stream=body is None)
        if body is not None:
            self.conn.send_data(stream, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        return stream

    def answer(self, stream: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        status, fields, body = 0, [], b""
        while True:
            for event in self.events_for(stream):
                if isinstance(event, h2.events.ResponseReceived):
                    fields = list(event.headers)
                    status = int(dict(fields)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded):
                    return status, fields, body
                elif isinstance(event, h2.events.StreamReset):
                    raise ConnectionResetError(f"stream {stream} reset: {event.error_code!r}")

    def events_for(self, stream: int) -> list[h2.events.Event]:
        mine = [e for e in self.events if getattr(e, "stream_id", None) == stream]
        if mine:
            self.events = [e for e in self.events if e not in mine]
            return mine
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.events.extend(self.conn.receive_data(data))
        self.sock.sendall(self.conn.data_to_send())
        return []

    def close(self) -> None:
        self.conn.close_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.sock.close()
