"""Response construction and validation."""

from __future__ import annotations

import sys

import pytest

import veter
from veter.testing import TestClient


def test_defaults() -> None:
    r = veter.Response("hi")
    assert (r.status, r.body, r.content_type) == (200, b"hi", "text/plain; charset=utf-8")
    assert r.headers.multi_items() == [("Content-Type", "text/plain; charset=utf-8")]
    r = veter.Response(b"\x00")
    assert r.content_type == "application/octet-stream"
    assert veter.Response().body == b""


def test_headers_mapping_and_pairs() -> None:
    r = veter.Response("x", headers={"X-A": "1", "Content-Type": "text/html"})
    assert r.headers.multi_items() == [("Content-Type", "text/html"), ("X-A", "1")]
    assert r.content_type == "text/html"
    r = veter.Response(b"x", headers=[("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
    assert r.headers.getall("set-cookie") == ["a=1", "b=2"]


def test_header_methods() -> None:
    r = veter.Response("x")
    r.add_header("Vary", "a")
    r.add_header("vary", "b")
    assert r.get_header("VARY") == "a"
    r.set_header("Vary", "c")
    assert r.headers.getall("vary") == ["c"]
    assert r.remove_header("vary") == 1
    assert r.get_header("vary", "none") == "none"


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x00b", "a\x7fb"])
def test_control_characters_refused(value: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        veter.Response("x", headers={"X-A": value})
    r = veter.Response("x")
    with pytest.raises(ValueError, match="control character"):
        r.set_header("X-A", value)


@pytest.mark.parametrize("name", ["", "a b", "a:b", "a\r\nb", "é"])
def test_bad_header_names_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid header name"):
        veter.Response("x", headers={name: "1"})


@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding", "Connection"])
def test_framing_headers_reserved(name: str) -> None:
    with pytest.raises(ValueError, match="set by the server"):
        veter.Response("x", headers={name: "1"})


@pytest.mark.parametrize("status", [0, 99, 600, -1, 10**6])
def test_bad_status_refused(status: int) -> None:
    with pytest.raises(ValueError, match="between 100 and 599"):
        veter.Response("x", status=status)


def test_body_types() -> None:
    with pytest.raises(TypeError, match="bytes or str"):
        veter.Response(12)  # type: ignore[arg-type]


def test_helpers() -> None:
    r = veter.json({"a": 1}, status=201)
    assert (r.status, r.body, r.content_type) == (201, b'{"a":1}', "application/json")
    r = veter.text("t", headers={"X": "y"})
    assert (r.body, r.headers) == (b"t", {"X": "y", "Content-Type": "text/plain; charset=utf-8"})
    r = veter.redirect("/there")
    assert (r.status, r.get_header("location")) == (307, "/there")
    with pytest.raises(ValueError, match="3xx"):
        veter.redirect("/x", status=200)


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses_on_the_wire(status: int) -> None:
    app = veter.App()
    app.add_route("/", lambda r: veter.Response("ignored", status=status))
    raw = TestClient(app).send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert raw.status == status
    assert "content-length" not in raw.headers
    assert raw.content == b""


def test_the_core_knows_streamed_answers_by_their_base_class() -> None:
    """No marker attribute: StreamingResponse (and the WebSocket 101) derive from
    the core's Streamed, whose start and abandon every subclass must implement."""
    from veter import _core
    from veter.streaming import StreamingResponse

    assert isinstance(StreamingResponse(iter([b"x"])), _core.Streamed)
    bare = _core.Streamed()
    with pytest.raises(NotImplementedError, match="_veter_start"):
        bare._veter_start(None, True)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="_veter_abandon"):
        bare._veter_abandon()


@pytest.mark.parametrize(
    "text",
    ["Hello, World!", "", "é", "naïve café", "日本語", "🎉 party", "a" * 5000, "x\x00y", "\x7f"],
)
def test_a_str_answer_is_its_utf8(text: str) -> None:
    # An ASCII str's bytes are read in place (src/ffi/ascii_text.rs), any other
    # through its UTF-8: the body and its length are the same either way, and
    # the answer holds no reference to the str once written.
    app = veter.App()
    answer = "".join(text)  # a str of its own, not a constant shared with the test
    app.add_route("/", lambda request: answer)
    before = sys.getrefcount(answer)
    raw = TestClient(app).send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert raw.status == 200
    assert raw.content == text.encode()
    assert raw.headers["content-length"] == str(len(text.encode()))
    assert raw.headers["content-type"] == "text/plain; charset=utf-8"
    assert sys.getrefcount(answer) == before
