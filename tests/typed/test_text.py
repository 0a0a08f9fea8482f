"""The rules for reading scalars from text (veter.typed.text): one table, checked
on every path that converts (query, header, cookie, path, form field, form model)
and against pydantic v2's lax mode, which FastAPI applies to the same texts:
veter answers as pydantic does except in the rows marked stricter."""

from __future__ import annotations

import datetime
import decimal
import math
import urllib.parse
import uuid
from typing import Annotated, Any

import msgspec
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import veter
from veter.params import Cookie, Form, Header, Query
from veter.testing import TestClient
from veter.typed.text import TextError, float_from_text, int_from_text

REFUSED = object()
UID = uuid.UUID("12345678-1234-5678-1234-567812345678")

# (type, text, what veter reads or REFUSED, where pydantic differs: "stricter")
TABLE: list[tuple[Any, str, Any, str]] = [
    (int, "0", 0, ""),
    (int, "42", 42, ""),
    (int, "-7", -7, ""),
    (int, "+5", 5, ""),
    (int, "007", 7, ""),
    (int, "-0", 0, ""),
    (int, "9" * 30, int("9" * 30), ""),
    (int, "1e2", REFUSED, ""),
    (int, "1.5", REFUSED, ""),
    (int, "0x10", REFUSED, ""),
    (int, "+-1", REFUSED, ""),
    (int, "\u0663", REFUSED, ""),  # ARABIC-INDIC DIGIT THREE: int() would read it
    (int, "nan", REFUSED, ""),
    (int, "9" * 4301, REFUSED, ""),
    (int, "5.0", REFUSED, "stricter"),
    (int, "1_000", REFUSED, "stricter"),
    (int, " 5", REFUSED, "stricter"),
    (float, "1", 1.0, ""),
    (float, "-2.5", -2.5, ""),
    (float, "+1.5", 1.5, ""),
    (float, ".5", 0.5, ""),
    (float, "5.", 5.0, ""),
    (float, "1e3", 1000.0, ""),
    (float, "1E-2", 0.01, ""),
    (float, "nan", math.nan, ""),
    (float, "NaN", math.nan, ""),
    (float, "-nan", math.nan, ""),
    (float, "inf", math.inf, ""),
    (float, "-Infinity", -math.inf, ""),
    (float, "INF", math.inf, ""),
    (float, "0x1p3", REFUSED, ""),
    (float, "1.5.5", REFUSED, ""),
    (float, "abc", REFUSED, ""),
    (float, "1e400", REFUSED, "stricter"),
    (float, "1_0.5", REFUSED, "stricter"),
    (float, " 1.5", REFUSED, "stricter"),
    (bool, "true", True, ""),
    (bool, "True", True, ""),
    (bool, "1", True, ""),
    (bool, "yes", True, ""),
    (bool, "ON", True, ""),
    (bool, "t", True, ""),
    (bool, "y", True, ""),
    (bool, "false", False, ""),
    (bool, "0", False, ""),
    (bool, "No", False, ""),
    (bool, "off", False, ""),
    (bool, "f", False, ""),
    (bool, "n", False, ""),
    (bool, "2", REFUSED, ""),
    (bool, "1.0", REFUSED, ""),
    (bool, "tru", REFUSED, ""),
    (bool, " true", REFUSED, ""),
    (decimal.Decimal, "1", decimal.Decimal("1"), ""),
    (decimal.Decimal, "-1.50", decimal.Decimal("-1.50"), ""),
    (decimal.Decimal, "+2", decimal.Decimal("2"), ""),
    (decimal.Decimal, ".5", decimal.Decimal("0.5"), ""),
    (decimal.Decimal, "1e2", decimal.Decimal("1E+2"), ""),
    (decimal.Decimal, "nan", REFUSED, ""),
    (decimal.Decimal, "Infinity", REFUSED, ""),
    (decimal.Decimal, "0x10", REFUSED, ""),
    (decimal.Decimal, "1_000", REFUSED, "stricter"),
    (decimal.Decimal, " 1", REFUSED, "stricter"),
    (uuid.UUID, str(UID), UID, ""),
    (uuid.UUID, UID.hex, UID, ""),
    (uuid.UUID, str(UID).upper(), UID, ""),
    (uuid.UUID, str(UID)[:-1], REFUSED, ""),
    (uuid.UUID, "{" + str(UID) + "}", REFUSED, "stricter"),
    (uuid.UUID, "urn:uuid:" + str(UID), REFUSED, "stricter"),
    (datetime.date, "2024-01-02", datetime.date(2024, 1, 2), ""),
    (datetime.date, "2024-1-2", REFUSED, ""),
    (datetime.date, "2024-01-02T00:00:00", REFUSED, "stricter"),
    (datetime.date, "0", REFUSED, "stricter"),
    (datetime.datetime, "2024-01-02T03:04:05", datetime.datetime(2024, 1, 2, 3, 4, 5), ""),
    (datetime.datetime, "2024-01-02 03:04:05", datetime.datetime(2024, 1, 2, 3, 4, 5), ""),
    (
        datetime.datetime,
        "2024-01-02T03:04:05Z",
        datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "",
    ),
    (
        datetime.datetime,
        "1700000000",
        datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.UTC),
        "",
    ),
    (datetime.datetime, "2024-01-02", REFUSED, "stricter"),
    (datetime.time, "03:04:05", datetime.time(3, 4, 5), ""),
    (datetime.time, "03:04:05.5", datetime.time(3, 4, 5, 500000), ""),
    (datetime.time, "3:4:5", REFUSED, ""),
    (datetime.time, "03:04", REFUSED, "stricter"),
    (datetime.timedelta, "P1D", datetime.timedelta(days=1), ""),
    (datetime.timedelta, "PT1H30M", datetime.timedelta(hours=1, minutes=30), ""),
    (datetime.timedelta, "-P1D", datetime.timedelta(days=-1), ""),
    (datetime.timedelta, "3600", REFUSED, ""),
    (datetime.timedelta, "1:00:00", REFUSED, "stricter"),
]

TYPES = sorted({row[0] for row in TABLE}, key=lambda t: t.__name__)


def _name(tp: Any) -> str:
    return tp.__name__.lower()


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(want) and got == want


def make_app() -> veter.App:
    app = veter.App()
    for tp in TYPES:
        name = _name(tp)
        model = msgspec.defstruct(f"Form{name}", [("v", tp)])

        def query(v: Any) -> Any:
            return repr(v)

        async def header(v: Any) -> Any:
            return repr(v)

        def cookie(v: Any) -> Any:
            return repr(v)

        async def path(v: Any) -> Any:
            return repr(v)

        async def form(v: Any) -> Any:
            return repr(v)

        def form_model(m: Any) -> Any:
            return repr(m.v)

        for handler, hint in (
            (query, Annotated[tp, Query()]),
            (header, Annotated[tp, Header(alias="X-V")]),
            (cookie, Annotated[tp, Cookie()]),
            (path, tp),
            (form, Annotated[tp, Form()]),
        ):
            handler.__annotations__ = {"v": hint, "return": str}
        form_model.__annotations__ = {"m": Annotated[model, Form()], "return": str}
        app.get(f"/query/{name}")(query)
        app.get(f"/header/{name}")(header)
        app.get(f"/cookie/{name}")(cookie)
        app.get(f"/path/{name}/{{v}}")(path)
        app.post(f"/form/{name}")(form)
        app.post(f"/model/{name}")(form_model)
    return app


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(make_app()) as c:
        yield c  # type: ignore[misc]


def _send(client: TestClient, where: str, tp: Any, text: str) -> veter.testing.TestResponse | None:
    """The answer of the route reading ``text`` at ``where``; None where the
    text cannot be sent there (HTTP strips a header's and a cookie's edge
    whitespace before any rule sees it; a header is Latin-1)."""
    name = _name(tp)
    quoted = urllib.parse.quote(text, safe="")
    if where == "query":
        return client.get(f"/query/{name}?v={quoted}")
    if where == "path":
        return client.get(f"/path/{name}/{quoted}")
    if where in ("form", "model"):
        body = f"v={quoted}".encode()
        return client.post(
            f"/{where}/{name}", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
    if text != text.strip() or not text.isascii():
        return None
    if where == "header":
        return client.get(f"/header/{name}", headers={"X-V": text})
    if any(c in text for c in ';," '):
        return None
    return client.get(f"/cookie/{name}", headers={"Cookie": f"v={text}"})


WHERE = ["query", "header", "cookie", "path", "form", "model"]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize(
    ("tp", "text", "want"),
    [row[:3] for row in TABLE],
    ids=[f"{_name(row[0])}-{row[1][:12]!r}" for row in TABLE],
)
def test_every_path_reads_text_by_the_table(
    client: TestClient, where: str, tp: Any, text: str, want: Any
) -> None:
    r = _send(client, where, tp, text)
    if r is None:
        pytest.skip("this text cannot be sent there")
    if want is REFUSED:
        assert r.status == 422, r.text
        (problem,) = r.json()["detail"]
        loc = {"form": ["body", "v"], "model": ["body", "v"], "header": ["header", "x-v"]}.get(
            where, [where, "v"]
        )
        assert problem["loc"] == loc
        if where not in ("header", "cookie"):
            assert problem["input"] == (text if len(text) <= 200 else text[:200] + "...")
    else:
        assert r.status == 200, r.text
        assert r.text == repr(want)


@pytest.mark.parametrize(
    ("tp", "text", "want", "note"), TABLE, ids=[f"{_name(row[0])}-{row[1][:12]!r}" for row in TABLE]
)
def test_the_table_against_pydantic(tp: Any, text: str, want: Any, note: str) -> None:
    # FastAPI reads query values with pydantic's lax mode: veter answers the same,
    # or refuses where the row says it is stricter.
    try:
        theirs = pydantic.TypeAdapter(tp).validate_python(text)
    except pydantic.ValidationError:
        theirs = REFUSED
    if note == "stricter":
        assert want is REFUSED and theirs is not REFUSED
    elif want is REFUSED:
        assert theirs is REFUSED
    else:
        assert theirs is not REFUSED and (_same(theirs, want) or theirs == want)


def test_a_converter_made_path_value_is_left_alone_and_lists_read_each_text() -> None:
    app = veter.App()

    @app.get("/items/{n:int}")
    def items(n: int, ids: list[int] = []) -> dict[str, Any]:  # noqa: B006 - not mutated
        return {"n": n, "ids": ids}

    with TestClient(app) as c:
        assert c.get("/items/3?ids=1&ids=%2B2").json() == {"n": 3, "ids": [1, 2]}
        r = c.get("/items/3?ids=1&ids=1e2&ids=x")
        assert r.status == 422
        assert [(p["loc"], p["input"], p["type"]) for p in r.json()["detail"]] == [
            (["query", "ids", 1], "1e2", "int_parsing"),
            (["query", "ids", 2], "x", "int_parsing"),
        ]


def test_constraints_apply_to_the_value_read_and_echo_the_text() -> None:
    app = veter.App()

    @app.get("/page")
    async def page(limit: Annotated[int, Query(ge=1, le=100)] = 10, ratio: float = 0.5) -> str:
        return f"{limit} {ratio}"

    with TestClient(app) as c:
        assert c.get("/page?limit=%2B050&ratio=.25").text == "50 0.25"
        r = c.get("/page?limit=500&ratio=1e2x")
        assert r.status == 422
        found = {tuple(p["loc"]): p for p in r.json()["detail"]}
        assert found[("query", "limit")]["input"] == "500"
        assert "<= 100" in found[("query", "limit")]["msg"]
        assert found[("query", "ratio")]["type"] == "float_parsing"


@pytest.mark.parametrize("where", ["query", "form"])
def test_null_is_none_for_an_optional_and_refused_otherwise(where: str) -> None:
    # What Schemathesis sends for a null of `integer | null` in a query or form;
    # msgspec read it so before the rules, for every type it converts.
    app = veter.App()

    if where == "query":

        @app.get("/f")
        def query(n: int | None = 5, when: datetime.date | None = None, m: int = 1) -> dict[str, Any]:
            return {"n": n, "when": str(when), "m": m}

        def call(c: TestClient, text: str) -> Any:
            return c.get(f"/f?{text}")

    else:

        @app.post("/f")
        def form(
            n: Annotated[int | None, Form()] = 5,
            when: Annotated[datetime.date | None, Form()] = None,
            m: Annotated[int, Form()] = 1,
        ) -> dict[str, Any]:
            return {"n": n, "when": str(when), "m": m}

        def call(c: TestClient, text: str) -> Any:
            return c.post("/f", content=text, headers={"content-type": "application/x-www-form-urlencoded"})

    with TestClient(app) as c:
        assert call(c, "n=null&when=null").json() == {"n": None, "when": "None", "m": 1}
        assert call(c, "n=7").json() == {"n": 7, "when": "None", "m": 1}
        r = call(c, "m=null")
        assert r.status == 422
        assert r.json()["detail"][0]["type"] == "int_parsing"


class Signup(msgspec.Struct):
    age: int
    name: str


def test_a_form_model_with_a_bad_text_lists_it_and_the_rest() -> None:
    app = veter.App()

    @app.post("/signup")
    def signup(form: Annotated[Signup, Form()]) -> str:
        return form.name

    with TestClient(app) as c:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        assert c.post("/signup", content=b"age=%2B30&name=a", headers=form).text == "a"
        r = c.post("/signup", content=b"age=3e1", headers=form)
        assert r.status == 422
        assert sorted((tuple(p["loc"]), p["type"]) for p in r.json()["detail"]) == [
            (("body", "age"), "int_parsing"),
            (("body", "name"), "missing"),
        ]


def test_the_rule_says_what_it_reads() -> None:
    with pytest.raises(TextError, match="an optional sign and decimal digits") as caught:
        int_from_text("1e2")
    assert caught.value.kind == "int_parsing"
    with pytest.raises(TextError, match="out of range"):
        int_from_text("9" * 5000)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789+-.eEinfatyINFAT _\u0663", max_size=12))
def test_where_msgspec_reads_first_it_reads_as_the_rules(text: str) -> None:
    # The values reader lets msgspec's lax conversion read floats and an int's
    # plain digits before any rule runs (typed.text.split_rules): what it reads
    # there, the rule reads to the same value. (Bools always go to their rule:
    # msgspec reads `-0` as False, found here by CI's run of this test.)
    for tp, rule in ((float, float_from_text), (int, int_from_text)):
        if tp is int and not text.isdecimal():
            continue
        try:
            theirs = msgspec.convert(text, tp, strict=False)
        except msgspec.ValidationError:
            continue
        assert _same(rule(text), theirs), (tp, text)


def test_a_bool_is_read_by_its_rule_alone() -> None:
    # msgspec's lax conversion reads `-0` and `1.0` as bools; the rule does not.
    app = veter.App()

    @app.get("/f")
    def flag(on: bool = False, ratio: float = 0.0) -> dict[str, Any]:
        return {"on": on, "ratio": ratio}

    with TestClient(app) as c:
        assert c.get("/f?on=yes&ratio=-0").json() == {"on": True, "ratio": -0.0}
        for text in ("-0", "1.0", "+1"):
            r = c.get(f"/f?on={urllib.parse.quote(text)}")
            assert r.status == 422, text
            assert r.json()["detail"][0]["type"] == "bool_parsing"
