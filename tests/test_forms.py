"""request.form(): urlencoded and multipart bodies, files spooled to disk past a
threshold, every limit a setting answered 413, malformed bodies 400, other media
types 415, the form read once."""

from __future__ import annotations

from typing import Any

import pytest

import veter
from veter.testing import TestClient


async def describe(form: veter.FormData) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in form:
        values = []
        for value in form.getall(key):
            if isinstance(value, veter.UploadFile):
                data = await value.read()
                values.append(
                    {
                        "filename": value.filename,
                        "type": value.content_type,
                        "size": value.size,
                        "memory": value.in_memory,
                        "data": data.decode("latin-1")[:20],
                        "length": len(data),
                    }
                )
            else:
                values.append(value)
        out[key] = values
    return out


def make_app(**settings: Any) -> veter.App:
    app = veter.App(**settings)

    @app.post("/form")
    async def form(request: veter.Request) -> veter.Response:
        parsed = await request.form()
        assert await request.form() is parsed  # read once
        return veter.json(await describe(parsed))

    @app.post("/stream", stream_body=True)
    async def stream(request: veter.Request) -> veter.Response:
        return veter.json(await describe(await request.form()))

    return app


def multipart(*parts: bytes, boundary: str = "b0undary") -> tuple[bytes, dict[str, str]]:
    body = b"".join(b"--" + boundary.encode() + b"\r\n" + part + b"\r\n" for part in parts)
    return body + b"--" + boundary.encode() + b"--\r\n", {
        "content-type": f"multipart/form-data; boundary={boundary}"
    }


def field(name: str, value: bytes) -> bytes:
    return f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value


@pytest.fixture
def client() -> TestClient:
    with TestClient(make_app(form_spool_bytes=1000)) as c:
        yield c


def test_urlencoded_fields_in_order_with_repeats_and_blanks(client: TestClient) -> None:
    r = client.post(
        "/form",
        content="a=1&b=x+y%26z&a=2&empty=&flag&%C3%A9=%E2%82%AC",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status == 200
    assert r.json() == {"a": ["1", "2"], "b": ["x y&z"], "empty": [""], "flag": [""], "é": ["€"]}


def test_urlencoded_with_charset_parameter(client: TestClient) -> None:
    r = client.post(
        "/form", content="a=1", headers={"content-type": "Application/X-WWW-Form-Urlencoded; charset=utf-8"}
    )
    assert r.json() == {"a": ["1"]}


def test_multipart_fields_and_files(client: TestClient) -> None:
    r = client.post(
        "/form",
        data={"name": "bob", "tag": ["x", "y"]},
        files=[("doc", ("a.txt", b"hello", "text/plain")), ("doc", ("b.bin", b"\x00\x01"))],
    )
    assert r.status == 200
    body = r.json()
    assert body["name"] == ["bob"]
    assert body["tag"] == ["x", "y"]
    assert [d["filename"] for d in body["doc"]] == ["a.txt", "b.bin"]
    assert body["doc"][0] == {
        "filename": "a.txt",
        "type": "text/plain",
        "size": 5,
        "memory": True,
        "data": "hello",
        "length": 5,
    }
    assert body["doc"][1]["type"] == "application/octet-stream"


def test_large_file_is_spooled_to_disk_and_read_whole(client: TestClient) -> None:
    content = bytes(range(256)) * 400  # 102,400 bytes, over the 1,000-byte threshold
    for path in ("/form", "/stream"):
        r = client.post(path, files={"f": ("big.bin", content)})
        f = r.json()["f"][0]
        assert (f["size"], f["length"], f["memory"]) == (len(content), len(content), False)


def test_body_split_anywhere_parses_the_same() -> None:
    body, headers = multipart(
        field("a", b"first"),
        b'Content-Disposition: form-data; name="f"; filename="x.txt"\r\nContent-Type: text/plain\r\n\r\n'
        + b"0123456789" * 50,
    )
    app = make_app()

    async def pieces(size: int) -> Any:
        async with veter.testing.AsyncTestClient(app) as c:
            head = (
                f"POST /stream HTTP/1.1\r\nHost: t\r\nContent-Type: {headers['content-type']}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            return await c.send_raw(head + body)

    import asyncio

    r = asyncio.run(pieces(7))
    assert r.status == 200
    assert r.json()["a"] == ["first"]
    assert r.json()["f"][0]["length"] == 500


def test_no_body_and_no_type_is_an_empty_form(client: TestClient) -> None:
    assert client.post("/form").json() == {}


@pytest.mark.parametrize(
    ("content_type", "status"),
    [("application/json", 415), ("text/plain", 415), ("multipart/form-data", 400)],
)
def test_not_a_form(client: TestClient, content_type: str, status: int) -> None:
    r = client.post("/form", content=b"x=1", headers={"content-type": content_type})
    assert r.status == status
    assert ("boundary" in r.text) if status == 400 else ("must be a form" in r.text)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"--b0undary\r\n" + field("a", b"no end"), "ends inside a part"),
        (b"--b0undary\r\nContent-Type: text/plain\r\n\r\nx\r\n--b0undary--\r\n", "Content-Disposition"),
        (b"--b0undary\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--b0undary--\r\n", "form-data"),
        (b"--b0undary\r\n" + field("a", b"\xff\xfe") + b"\r\n--b0undary--\r\n", "not valid UTF-8"),
        (b"garbage without a boundary", "malformed multipart"),
        (b"", "no closing boundary"),
    ],
)
def test_malformed_multipart_is_400(client: TestClient, body: bytes, detail: str) -> None:
    r = client.post("/form", content=body, headers={"content-type": "multipart/form-data; boundary=b0undary"})
    assert r.status == 400, r.text
    assert detail in r.text


def test_invalid_utf8_in_urlencoded_is_400(client: TestClient) -> None:
    r = client.post("/form", content=b"a=%FF", headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status == 400
    assert "UTF-8" in r.text


LIMITS = [
    ({"form_max_fields": 3}, {"data": {"a": ["1", "2", "3", "4"]}}, "form_max_fields"),
    ({"form_max_fields": 2}, {"data": {"a": "1", "b": "2"}, "files": {"f": b"x"}}, "form_max_fields"),
    ({"form_max_files": 1}, {"files": [("f", ("1", b"x")), ("f", ("2", b"y"))]}, "form_max_files"),
    ({"form_max_field_bytes": 10}, {"data": {"a": "x" * 11}}, "form_max_field_bytes"),
    ({"form_max_field_bytes": 10}, {"data": {"a": "x" * 11}, "files": {"f": b""}}, "form_max_field_bytes"),
    ({"form_max_file_bytes": 100}, {"files": {"f": b"x" * 101}}, "form_max_file_bytes"),
]


@pytest.mark.parametrize(("settings", "request_kw", "setting"), LIMITS)
def test_limits_are_settings_answered_413(
    settings: dict[str, int], request_kw: dict[str, Any], setting: str
) -> None:
    with TestClient(make_app(**settings)) as c:
        for path in ("/form", "/stream"):
            r = c.post(path, **request_kw)
            assert r.status == 413, r.text
            assert setting in r.text


def test_limits_allow_what_they_name() -> None:
    with TestClient(make_app(form_max_fields=3, form_max_field_bytes=10, form_max_file_bytes=100)) as c:
        assert c.post("/form", data={"a": ["1", "2", "x" * 10]}).status == 200
        assert c.post("/form", data={"a": "1"}, files={"f": b"x" * 100}).status == 200


def test_percent_encoded_field_is_measured_decoded() -> None:
    with TestClient(make_app(form_max_field_bytes=3)) as c:
        ok = c.post(
            "/form", content=b"a=%E2%82%AC", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert ok.status == 200
        assert ok.json() == {"a": ["€"]}


def test_part_headers_limit() -> None:
    body, headers = multipart(
        b'Content-Disposition: form-data; name="a"\r\nX-Pad: ' + b"p" * 200 + b"\r\n\r\nv"
    )
    with TestClient(make_app(form_max_part_header_bytes=100)) as c:
        r = c.post("/form", content=body, headers=headers)
        assert r.status == 413
        assert "form_max_part_header_bytes" in r.text
    with TestClient(make_app()) as c:
        assert c.post("/form", content=body, headers=headers).json() == {"a": ["v"]}


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="form_max_fields"):
        veter.App(form_max_fields=0)


def test_upload_file_api() -> None:
    app = veter.App(form_spool_bytes=10)

    @app.post("/")
    async def handler(request: veter.Request) -> str:
        form = await request.form()
        upload = form["f"]
        assert isinstance(upload, veter.UploadFile)
        first = await upload.read(3)
        await upload.seek(0)
        whole = await upload.read()
        assert form.files() == [upload]
        text = repr(upload)
        await form.close()
        assert upload.file.closed
        return f"{first.decode()}|{len(whole)}|{upload.headers['content-type']}|{text}"

    with TestClient(app) as c:
        r = c.post("/", files={"f": ("n.txt", b"abcdefghijklmnop", "text/x-test")})
        assert (
            r.text == "abc|16|text/x-test|UploadFile(filename='n.txt', content_type='text/x-test', size=16)"
        )
