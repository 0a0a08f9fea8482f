"""Typed handlers: Form fields (constraints, lists, defaults, a whole model) and
File parameters (UploadFile, lists, bytes), their 422s under "body", their
OpenAPI request bodies, and the signatures refused at startup."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import msgspec
import pydantic
import pytest
from openapi_spec_validator import validate

import veter
from veter.params import Depends, File, Form
from veter.testing import TestClient


class Signup(msgspec.Struct):
    user: str
    age: Annotated[int, msgspec.Meta(ge=0)]
    tags: list[str] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Profile(pydantic.BaseModel):
    name: str
    langs: list[str] = []


def form_user(user: Annotated[str, Form()]) -> str:
    return user.upper()


def make_app() -> veter.App:
    app = veter.App(openapi=veter.OpenAPI(title="forms"), form_spool_bytes=100)

    @app.post("/fields")
    def fields(
        name: Annotated[str, Form(min_length=2)],
        n: Annotated[int, Form(ge=1, le=10)] = 5,
        tags: Annotated[list[str], Form()] = [],  # noqa: B006 - msgspec copies defaults
        note: Annotated[str | None, Form(alias="the-note")] = None,
    ) -> dict[str, object]:
        return {"name": name, "n": n, "tags": tags, "note": note}

    @app.post("/signup")
    def signup(form: Annotated[Signup, Form()]) -> Signup:
        return form

    @app.post("/point")
    def point(p: Annotated[Point, Form()]) -> Point:
        return p

    @app.post("/profile")
    def profile(p: Annotated[Profile, Form()]) -> Profile:
        return p

    @app.post("/upload")
    async def upload(
        file: veter.UploadFile,
        title: Annotated[str, Form()] = "",
        extra: Annotated[list[veter.UploadFile], File()] = [],  # noqa: B006
        maybe: veter.UploadFile | None = None,
    ) -> dict[str, object]:
        return {
            "file": [file.filename, file.content_type, (await file.read()).decode()],
            "title": title,
            "extra": [e.filename for e in extra],
            "maybe": maybe.filename if maybe else None,
            "spooled": not file.in_memory,
        }

    @app.post("/bytes")
    def raw(data: Annotated[bytes, File()], request: veter.Request) -> dict[str, int]:
        return {"length": len(data)}

    @app.post("/depends")
    def with_dependency(
        shout: Annotated[str, Depends(form_user)], n: Annotated[int, Form()] = 1
    ) -> dict[str, object]:
        return {"shout": shout, "n": n}

    return app


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(make_app()) as c:
        yield c


def test_fields_with_defaults_lists_and_aliases(client: TestClient) -> None:
    r = client.post("/fields", data={"name": "bob", "tags": ["a", "b"], "the-note": "hi", "n": "3"})
    assert r.json() == {"name": "bob", "n": 3, "tags": ["a", "b"], "note": "hi"}
    r = client.post("/fields", data={"name": "bob", "n": ""})
    assert r.json() == {"name": "bob", "n": 5, "tags": [], "note": None}  # an empty field keeps the default


def test_fields_every_problem_in_one_422(client: TestClient) -> None:
    r = client.post("/fields", data={"name": "b", "n": "11"})
    assert r.status == 422
    assert [(p["loc"], p["input"]) for p in r.json()["detail"]] == [
        (["body", "name"], "b"),
        (["body", "n"], "11"),
    ]
    r = client.post("/fields")
    assert r.json()["detail"] == [{"type": "missing", "loc": ["body", "name"], "msg": "Field required"}]


def test_multipart_fields_read_the_same(client: TestClient) -> None:
    r = client.post("/fields", data={"name": "bob"}, files={"unused": ("u", b"x")})
    assert r.json()["name"] == "bob"


@pytest.mark.parametrize("path", ["/signup", "/profile"])
def test_whole_form_into_a_model(client: TestClient, path: str) -> None:
    if path == "/signup":
        r = client.post(path, data={"user": "u", "age": "30", "tags": "solo"})
        assert r.json() == {"user": "u", "age": 30, "tags": ["solo"]}  # one value of a list field
        bad = client.post(path, data={"age": "-1"})
        assert sorted(tuple(p["loc"]) for p in bad.json()["detail"]) == [("body", "age"), ("body", "user")]
    else:
        r = client.post(path, data={"name": "n", "langs": ["py", "rs"]})
        assert r.json() == {"name": "n", "langs": ["py", "rs"]}
        bad = client.post(path, data={"langs": "py"})
        assert bad.status == 422
        assert bad.json()["detail"][0]["loc"] == ["body", "name"]


def test_whole_form_into_a_dataclass(client: TestClient) -> None:
    assert client.post("/point", data={"x": "1.5"}).json() == {"x": 1.5, "y": 0.0}
    assert client.post("/point", data={"x": "east"}).status == 422


def test_files(client: TestClient) -> None:
    r = client.post(
        "/upload",
        data={"title": "t"},
        files=[
            ("file", ("a.txt", b"hello", "text/plain")),
            ("extra", ("e1", b"1")),
            ("extra", ("e2", b"2")),
        ],
    )
    assert r.json() == {
        "file": ["a.txt", "text/plain", "hello"],
        "title": "t",
        "extra": ["e1", "e2"],
        "maybe": None,
        "spooled": False,
    }
    big = client.post("/upload", files={"file": ("big", b"x" * 1000)})
    assert big.json()["spooled"] is True


def test_an_empty_file_input_is_no_file(client: TestClient) -> None:
    # A browser sends a file input left empty as a part with filename="" and no data.
    r = client.post("/upload", files=[("file", ("a", b"x")), ("maybe", ("", b""))])
    assert r.json()["maybe"] is None
    r = client.post("/upload", files={"file": ("", b"")})
    assert r.status == 422
    assert r.json()["detail"][0]["loc"] == ["body", "file"]


def test_text_where_a_file_is_expected_and_the_reverse(client: TestClient) -> None:
    r = client.post("/upload", data={"file": "not a file"}, files={"x": b"1"})
    assert r.status == 422
    assert r.json()["detail"][0]["msg"] == "Expected a file, got a text field"
    r = client.post("/fields", files={"name": ("n.txt", b"file")})
    assert r.json()["detail"][0]["msg"] == "Expected a text field, got a file"


def test_bytes_file(client: TestClient) -> None:
    assert client.post("/bytes", files={"data": ("d", b"z" * 4000)}).json() == {"length": 4000}


def test_dependency_reads_the_form_too(client: TestClient) -> None:
    assert client.post("/depends", data={"user": "ann", "n": "2"}).json() == {"shout": "ANN", "n": 2}


def test_a_json_body_is_refused(client: TestClient) -> None:
    r = client.post("/fields", json={"name": "bob"})
    assert r.status == 415


def test_file_routes_stream_their_body() -> None:
    app = make_app()
    app.build_dispatcher(app.config)
    by_path = {e.path: e.stream_body for e in app._endpoints()}
    assert by_path["/upload"] is True
    assert by_path["/fields"] is False


def test_openapi_form_bodies() -> None:
    doc = make_app().openapi_document()
    validate(doc)
    fields = doc["paths"]["/fields"]["post"]["requestBody"]
    assert list(fields["content"]) == ["application/x-www-form-urlencoded"]
    schema = fields["content"]["application/x-www-form-urlencoded"]["schema"]
    assert schema["required"] == ["name"]
    assert set(schema["properties"]) == {"name", "n", "tags", "the-note"}
    upload = doc["paths"]["/upload"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert upload["properties"]["file"] == {"type": "string", "contentMediaType": "application/octet-stream"}
    assert upload["properties"]["extra"]["type"] == "array"
    signup = doc["paths"]["/signup"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert signup["schema"] == {"$ref": "#/components/schemas/Signup"}
    assert "422" in doc["paths"]["/fields"]["post"]["responses"]


def _serve(handler: object) -> None:
    app = veter.App()
    app.post("/x")(handler)  # type: ignore[arg-type]
    app.build_dispatcher(app.config)


def test_unservable_form_signatures_fail_at_startup() -> None:
    def json_and_form(body: Signup, name: Annotated[str, Form()]) -> None: ...

    def bad_file(f: Annotated[str, File()]) -> None: ...

    def bad_field(f: Annotated[dict[str, int], Form()]) -> None: ...

    with pytest.raises(TypeError, match="reads the body as JSON and 'name' as a form"):
        _serve(json_and_form)
    with pytest.raises(TypeError, match=r"'f' is a file; its type must be veter\.UploadFile"):
        _serve(bad_file)
    with pytest.raises(TypeError, match="'f' \\(form\\) has type"):
        _serve(bad_field)
