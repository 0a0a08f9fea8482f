from __future__ import annotations

from veter.datastructures import Headers, QueryParams, State, parse_cookies


def test_headers_case_insensitive_multi() -> None:
    h = Headers([("Content-Type", "a"), ("X-A", "1"), ("x-a", "2")])
    assert h["content-type"] == "a"
    assert h.get("X-A") == "1"
    assert h.getall("X-a") == ["1", "2"]
    assert h.getall("missing") == []
    assert "CONTENT-TYPE" in h and 3 not in h
    assert list(h) == ["content-type", "x-a"]
    assert len(h) == 2
    assert h.multi_items()[0] == ("Content-Type", "a")
    assert h == Headers([("content-type", "a"), ("x-a", "1"), ("X-A", "2")])


def test_query_params() -> None:
    q = QueryParams.from_string("a=1&a=2&b=%20x&c&d=")
    assert q["a"] == "1"
    assert q.getall("a") == ["1", "2"]
    assert q["b"] == " x"
    assert q["c"] == "" and q["d"] == ""
    assert "A" not in q


def test_cookies() -> None:
    assert parse_cookies('a=1; b="two"; bad; =x;c = 3 ') == {"a": "1", "b": "two", "c": "3"}
    assert parse_cookies("") == {}


def test_state() -> None:
    s = State(a=1)
    s.b = 2
    assert (s.a, s.b) == (1, 2)
    assert "a=1" in repr(s)
