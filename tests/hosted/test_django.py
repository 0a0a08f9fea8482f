"""A Django project moved onto veter with one command, served as WSGI (plain and
inside ``wsgiref.validate.validator``) and as ASGI, driven by httpx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.processes import Proc
from tests.hosted import checks

httpx = pytest.importorskip("httpx")
pytest.importorskip("django")

MODULE = "tests.hosted.apps.django_app"


@pytest.fixture(scope="module", params=["wsgi", "wsgi_validated", "asgi"])
def server(request: pytest.FixtureRequest) -> Iterator[Proc]:
    interface = "asgi" if request.param == "asgi" else "wsgi"
    proc = Proc(
        ["run", f"{MODULE}:{request.param}", "--port", "0", "--workers", "1", "--interface", interface]
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.close()
    # The validator raises (and the worker logs) on any breach of PEP 3333.
    assert "AssertionError" not in proc.output()


@pytest.fixture(scope="module")
def client(server: Proc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as c:
        yield c


def test_routes_and_json(client: httpx.Client) -> None:
    assert client.get("/").json() == {"hello": "world"}
    assert client.get("/items/7", params={"q": "x"}).json() == {"item_id": 7, "q": "x"}
    r = client.post("/echo", json={"a": [1, 2]})
    assert (r.status_code, r.json()) == (201, {"method": "POST", "json": {"a": [1, 2]}})
    assert client.get("/nope").status_code == 404
    assert client.head("/").content == b""


def test_form_and_upload(client: httpx.Client) -> None:
    checks.form_and_upload(client)


def test_streaming(client: httpx.Client) -> None:
    assert client.get("/stream").text == "".join(f"piece {i}\n" for i in range(5))


def test_async_streaming(client: httpx.Client) -> None:
    # Under WSGI, Django consumes an async iterator itself (with a warning).
    assert client.get("/async-stream").text == "".join(f"async {i}\n" for i in range(3))


def test_request_meta(client: httpx.Client) -> None:
    r = client.get("/meta", headers={"User-Agent": "veter-test"})
    assert r.json() == {
        "path": "/meta",
        "path_info": "/meta",
        "script_name": "",
        "host": f"127.0.0.1:{client.base_url.port}",
        "secure": False,
        "agent": "veter-test",
    }


def test_view_error_is_djangos_500(client: httpx.Client) -> None:
    assert client.get("/fail").status_code == 500
    assert client.get("/").status_code == 200
