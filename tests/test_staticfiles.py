"""Static files: content types, validators, conditional and Range requests, and no
way out of the directory."""

from __future__ import annotations

import email.utils
import os
from pathlib import Path

import pytest

import veter
from veter.testing import TestClient

BIG = bytes(range(256)) * 4096  # 1 MiB: several pieces of 256 KiB


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "hello.txt").write_text("hello, world\n")
    (root / "app.js").write_text("console.log(1)\n")
    (root / "big.bin").write_bytes(BIG)
    (root / "docs" / "index.html").write_text("<p>docs</p>")
    (root / "empty").mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "out").symlink_to(tmp_path / "secret.txt")
    (root / "in").symlink_to(root / "hello.txt")
    return root


def client(site: Path) -> TestClient:
    app = veter.App()
    app.static("/static", site)
    return TestClient(app)


def test_files_types_and_validators(site: Path) -> None:
    with client(site) as c:
        text = c.get("/static/hello.txt")
        js = c.get("/static/app.js")
        big = c.get("/static/big.bin")
        index = c.get("/static/docs/")
        linked = c.get("/static/in")
    assert text.status == 200 and text.content == b"hello, world\n"
    assert text.headers["content-type"] == "text/plain; charset=utf-8"
    assert text.headers["content-length"] == "13" and text.headers["accept-ranges"] == "bytes"
    st = os.stat(site / "hello.txt")
    assert text.headers["last-modified"] == email.utils.formatdate(st.st_mtime, usegmt=True)
    assert text.headers["etag"].startswith('"')
    assert "javascript" in js.headers["content-type"]
    assert big.content == BIG and big.headers["content-type"] == "application/octet-stream"
    assert index.content == b"<p>docs</p>"
    assert linked.content == b"hello, world\n", "a symlink that stays inside is served"


def test_head(site: Path) -> None:
    with client(site) as c:
        answer = c.request("HEAD", "/static/big.bin")
    assert (
        answer.status == 200 and answer.content == b"" and answer.headers["content-length"] == str(len(BIG))
    )


def test_conditional_requests(site: Path) -> None:
    with client(site) as c:
        first = c.get("/static/hello.txt")
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        assert c.get("/static/hello.txt", headers={"If-None-Match": etag}).status == 304
        assert c.get("/static/hello.txt", headers={"If-None-Match": f'"other", {etag}'}).status == 304
        assert c.get("/static/hello.txt", headers={"If-None-Match": '"other"'}).status == 200
        assert c.get("/static/hello.txt", headers={"If-Modified-Since": modified}).status == 304
        old = email.utils.formatdate(0, usegmt=True)
        assert c.get("/static/hello.txt", headers={"If-Modified-Since": old}).status == 200
        # If-None-Match wins over If-Modified-Since.
        both = {"If-None-Match": '"other"', "If-Modified-Since": modified}
        assert c.get("/static/hello.txt", headers=both).status == 200
        not_modified = c.get("/static/hello.txt", headers={"If-None-Match": etag})
    assert not_modified.content == b"" and not_modified.headers["etag"] == etag


@pytest.mark.parametrize(
    ("header", "status", "body", "content_range"),
    [
        ("bytes=0-4", 206, b"hello", "bytes 0-4/13"),
        ("bytes=7-", 206, b"world\n", "bytes 7-12/13"),
        ("bytes=-6", 206, b"world\n", "bytes 7-12/13"),
        ("bytes=7-1000", 206, b"world\n", "bytes 7-12/13"),
        ("bytes=13-", 416, b"", "bytes */13"),
        ("bytes=-0", 416, b"", "bytes */13"),
        ("bytes=0-1,3-4", 200, b"hello, world\n", None),  # several ranges: the whole file
        ("bytes=5-2", 200, b"hello, world\n", None),  # malformed: ignored
        ("items=0-1", 200, b"hello, world\n", None),
    ],
)
def test_ranges(site: Path, header: str, status: int, body: bytes, content_range: str | None) -> None:
    with client(site) as c:
        answer = c.get("/static/hello.txt", headers={"Range": header})
    assert (answer.status, answer.content, answer.headers.get("content-range")) == (
        status,
        body,
        content_range,
    )


def test_if_range(site: Path) -> None:
    with client(site) as c:
        etag = c.get("/static/hello.txt").headers["etag"]
        same = c.get("/static/hello.txt", headers={"Range": "bytes=0-4", "If-Range": etag})
        other = c.get("/static/hello.txt", headers={"Range": "bytes=0-4", "If-Range": '"stale"'})
        big = c.get("/static/big.bin", headers={"Range": "bytes=300000-300009"})
    assert same.status == 206 and same.content == b"hello"
    assert other.status == 200 and other.content == b"hello, world\n"
    assert big.status == 206 and big.content == BIG[300000:300010]


@pytest.mark.parametrize(
    "path",
    [
        "/static/../secret.txt",
        "/static/%2e%2e/secret.txt",
        "/static/%2E%2E%2Fsecret.txt",
        "/static/docs/../../secret.txt",
        "/static/out",  # a symlink pointing outside
        "/static/hello.txt%00.png",
        "/static/..%5csecret.txt",
        "/static//etc/passwd",
        "/static/empty",  # a directory without an index
        "/static/missing.txt",
        "/static/hello.txt/",
    ],
)
def test_nothing_escapes_the_directory(site: Path, path: str) -> None:
    with client(site) as c:
        answer = c.get(path)
    assert answer.status == 404, (path, answer.status, answer.content)
    assert b"outside" not in answer.content


def test_bad_setup() -> None:
    app = veter.App()
    with pytest.raises(ValueError, match="not a directory"):
        app.static("/static", "/nonexistent/dir")
    with pytest.raises(ValueError, match="must start with '/'"):
        app.static("static", ".")
