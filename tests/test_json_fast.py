"""The core's own JSON writer (src/json_fast.rs) against orjson, its oracle.

For every value it writes, its bytes must be orjson.dumps's (veter passes no
options); every value holding something it does not write must be left to orjson
(``json_fast`` gives None), so that the client gets exactly what orjson makes of it,
error included. Checked on random nested values, then through the core's answer
path.
"""

from __future__ import annotations

import enum
import sys
from typing import Any

import orjson
from hypothesis import event, given, settings
from hypothesis import strategies as st

import veter
from veter._core import json_fast
from veter.testing import MemoryTransport, TestClient, _ResponseReader

#: src/json_fast.rs MAX_DEPTH: containers nested deeper are left to orjson.
MAX_DEPTH = 32


class Sub(str):
    pass


class SubDict(dict[str, Any]):
    pass


class SubList(list[Any]):
    pass


class Colour(enum.IntEnum):
    RED = 1


def written_here(value: Any, level: int = 1) -> bool:
    """Whether json_fast writes ``value`` (a container at nesting ``level``) itself."""
    kind = type(value)
    if kind is str:
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate
            return False
        return True
    if kind is int:
        return -(2**63) <= value < 2**63
    if value is None or kind is bool:
        return True
    if kind in (list, tuple):
        return level <= MAX_DEPTH and all(written_here(item, level + 1) for item in value)
    if kind is dict:
        return level <= MAX_DEPTH and all(
            type(key) is str and written_here(key) and written_here(item, level + 1)
            for key, item in value.items()
        )
    return False


def oracle(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


_text = (
    st.text(st.characters(max_codepoint=0x7F))
    | st.text()
    | st.text(st.characters(categories=["Cs"]), max_size=3)
)
_ints = st.integers(-(2**63), 2**63 - 1) | st.integers(-(2**70), 2**70)
_odd = st.sampled_from([Sub("sub"), Colour.RED, b"bytes", SubDict(a=1), SubList([1])])
_scalars = st.none() | st.booleans() | _ints | st.floats() | _text | _odd
_keys = _text | st.integers(0, 3) | st.just(Sub("k"))
_values = st.recursive(
    _scalars,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.lists(kids, max_size=4).map(tuple)
        | st.dictionaries(_keys, kids, max_size=4)
    ),
    max_leaves=20,
)
_common = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
    max_leaves=20,
)
_tops = (
    st.lists(_values, max_size=4)
    | st.dictionaries(_keys, _values, max_size=4)
    | _common.filter(lambda v: isinstance(v, (dict, list)))
)


@given(_tops)
@settings(max_examples=600)
def test_same_bytes_as_orjson_or_left_to_it(value: Any) -> None:
    written = json_fast(value)
    event("written here" if written_here(value) else "left to orjson")
    if written_here(value):
        assert written == orjson.dumps(value)
    else:
        assert written is None


def test_every_character_escaped_as_orjson_does() -> None:
    text = "".join(map(chr, range(0x100))) + "\u2028\u2029\U0001f600\ufffd"
    value = {text: [text, text[::-1]], "": ""}
    assert json_fast(value) == orjson.dumps(value)


#: Characters of each storage kind of a str: ASCII (read in place, src/ffi/ascii_text.rs),
#: Latin-1 beyond ASCII (one byte a character too, but not its UTF-8), two and four bytes.
_KINDS = {"ascii": "a", "latin1": "\xe9", "ucs2": "\u2028", "ucs4": "\U0001f600"}
#: Every character escaped, and the unescaped ones beside them (space, DEL).
_ESCAPED = [chr(c) for c in range(0x20)] + ['"', "\\", " ", "\x7f", "/"]


def test_each_escape_at_each_position_of_each_kind() -> None:
    """Each escaped character at each position of a string of each length up to
    three words (short strings, one or two words written as two pieces, whole
    words, an overlapping last word), in strings of each storage kind, as keys and
    as values, against orjson."""
    for kind, filler in _KINDS.items():
        for length in range(25):
            base = filler * length
            assert json_fast([base]) == orjson.dumps([base]), (kind, length)
            for at in range(length):
                for char in _ESCAPED:
                    text = base[:at] + char + base[at + 1 :]
                    value = {text: text, "v": [text, text + char]}
                    assert json_fast(value) == orjson.dumps(value), (kind, text)


def test_strings_read_in_place_keep_their_references() -> None:
    """Reading a str's text in place takes no reference and leaves none."""
    texts = ["".join(("plain ", str(n))) for n in range(3)] + ["\xe9t\xe9", "\u2028", "\U0001f600"]
    before = [sys.getrefcount(text) for text in texts]
    for _ in range(100):
        assert json_fast(texts) == orjson.dumps(texts)
    assert [sys.getrefcount(text) for text in texts] == before


def test_dict_items_walked_keep_their_references() -> None:
    """Each key and value of a dict walked (src/ffi/dict_next.rs) is let go again,
    also when the walk stops at something left to orjson."""
    value = "".join(("v", "1"))
    items = [value, [value], {"inner": value}]
    written = {"".join(("k", str(n))): item for n, item in enumerate(items)}
    refused = {**written, "float": 1.5}
    for each in (written, refused):
        json_fast(each)  # its keys remembered (a reference each, kept)
        before = [sys.getrefcount(x) for x in (*each, *each.values())]
        for _ in range(100):
            assert json_fast(each) == oracle(each) if each is written else json_fast(each) is None
        assert [sys.getrefcount(x) for x in (*each, *each.values())] == before


def test_subclasses_keep_going_to_orjson() -> None:
    for value in ([Sub("plain")], {"k": Sub("x")}, {Sub("k"): "x"}, [SubDict()], [SubList()], [Colour.RED]):
        assert json_fast(value) is None, value


def test_remembered_key_lengths() -> None:
    """Keys whose text (quoted, with its colon) is up to and past what a slot holds."""
    for length in range(40):
        for filler in ("k", "\n", "\xe9"):
            key = filler * length
            value = {key: length}
            for _ in range(2):  # written, then remembered
                assert json_fast(value) == orjson.dumps(value), key


def test_edges_written_here() -> None:
    for value in (
        {},
        [],
        [(), {}, [[]]],
        [-(2**63), 2**63 - 1, 0, -1, True, False, None],
        {"a": {"b": ("c", 1)}},
    ):
        assert json_fast(value) == orjson.dumps(value), value


def test_what_is_left_to_orjson() -> None:
    for value in (
        [1.5],
        [2**63],
        [-(2**63) - 1],
        [Sub("x")],
        {Sub("k"): 1},
        {1: 1},
        ["\ud800"],
        {"\udfff": 1},
        [Colour.RED],
        SubDict(a=1),
        SubList(),
        [b"x"],
        ("top", "tuple"),
    ):
        assert json_fast(value) is None, value


def test_remembered_keys() -> None:
    """Keys are remembered by their str object between answers: the same objects
    again, many new ones (each replacing another's slot, freed and their addresses
    reused), escaped and long ones all still give orjson's text."""
    constant = {"message": "Hello", 'a"b\n': 1, "k" * 40: 2, "é": 3}
    for _ in range(3):
        assert json_fast(constant) == orjson.dumps(constant)
    made = [{f"key {i}": i, "message": i} for i in range(300)]
    for _ in range(2):
        for value in made:
            assert json_fast(value) == orjson.dumps(value)
    for i in range(300):  # new keys made and freed one by one
        value = {"".join(("x", str(i))): i}
        assert json_fast(value) == orjson.dumps(value)
        del value


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_nesting_limit() -> None:
    assert json_fast(nested(MAX_DEPTH)) == orjson.dumps(nested(MAX_DEPTH))
    assert json_fast(nested(MAX_DEPTH + 1)) is None
    cycle: list[Any] = []
    cycle.append(cycle)
    assert json_fast(cycle) is None


def test_answers_through_the_core() -> None:
    """What a handler returns reaches the client as orjson makes it (the core's
    writer or orjson itself), and a value orjson refuses is a 500, as before."""
    box: list[Any] = [None]
    app = veter.App()

    @app.get("/value")
    def value(request: veter.Request) -> object:
        return box[0]

    with TestClient(app) as client:

        @given(_tops)
        @settings(max_examples=150, deadline=None)
        def check(answer: Any) -> None:
            box[0] = answer
            response = client.get("/value")
            expected = oracle(answer)
            if expected is None:
                assert response.status_code == 500
                return
            assert response.status_code == 200
            assert response.content == expected
            assert response.headers["content-type"] == "application/json"
            assert response.headers["content-length"] == str(len(expected))

        check()
        box[0] = {"message": "Hello, World!"}
        head = client.request("HEAD", "/value")
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == str(len(b'{"message":"Hello, World!"}'))


async def test_answers_written_behind_their_heads_in_one_read() -> None:
    """The core writes a JSON answer straight behind its head, with its length set
    afterwards (src/http1/encode.rs ``encode_ok_with``): answers of each width of
    length, behind other answers in the same output, HEAD, HTTP/1.0 and a value
    left to orjson after part of it was written, all as orjson makes them."""
    answers: list[Any] = [
        [],  # 2 bytes: one digit
        {"message": "Hello, World!"},  # two digits, the width written ahead
        {"a": "x" * 200, "n": [1, 2, 3]},  # three digits
        {"a": "x", "b": 1.5},  # left to orjson after "a" was written
        ["y" * 5000],  # four digits
    ]
    app = veter.App()

    @app.get("/{i:int}")
    def answer(request: veter.Request, i: int) -> object:
        return answers[i]

    requests = [("GET", i, "1.1") for i in range(len(answers))]
    requests += [("HEAD", 1, "1.1"), ("HEAD", 2, "1.1"), ("GET", 2, "1.0"), ("GET", 3, "1.1")]
    raw = b"".join(
        f"{method} /{i} HTTP/{version}\r\nHost: t\r\n{'Connection: keep-alive' if version == '1.0' else 'X: y'}\r\n\r\n".encode()
        for method, i, version in requests
    )
    conn = app.build_dispatcher(app.config)()
    transport = MemoryTransport(conn, ("127.0.0.1", 1))
    conn.connection_made(transport)
    conn.data_received(raw)
    data = bytes(transport.data)
    for method, i, version in requests:
        parsed = _ResponseReader(method == "HEAD").parse(data, False)
        assert parsed is not None
        response, used = parsed
        expected = orjson.dumps(answers[i])
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["content-length"] == str(len(expected))
        assert response.content == (b"" if method == "HEAD" else expected)
        if version == "1.0":
            assert response.headers["connection"] == "keep-alive"
        data = data[used:]
    assert data == b""
    transport.close()
