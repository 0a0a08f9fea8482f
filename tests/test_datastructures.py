from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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


@given(st.text(alphabet="ab=&%+;2F", max_size=30))
def test_query_parsing_matches_parse_qsl(query: str) -> None:
    # The fast path (nothing to decode) splits as parse_qsl does; the rest is parse_qsl.
    from urllib.parse import parse_qsl

    try:
        expected = parse_qsl(query, keep_blank_values=True)
    except UnicodeDecodeError:
        return
    assert QueryParams.from_string(query).multi_items() == expected


def test_get_is_first_value_or_default() -> None:
    q = QueryParams([("a", "1"), ("a", "2")])
    assert q.get("a") == "1"
    assert q.get("b") is None
    assert q.get("b", "x") == "x"
    h = Headers([("X-Token", "t")])
    assert h.get("x-token") == "t" and h.get("X-TOKEN") == "t"
