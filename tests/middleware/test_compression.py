"""Compression (veter.middleware.compress): negotiation by q-values, what is left
alone, streamed bodies flushed piece by piece, Vary and ETag; decoded with the
codings' own libraries."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator
from typing import Any

import brotli
import pytest
import zstandard

import veter
from veter.middleware import compress
from veter.middleware.compression import _brotli, _gzip, _zstd, available_encodings, negotiate
from veter.streaming import StreamingResponse
from veter.testing import TestClient

TEXT = "veter " * 400  # 2,400 bytes


def make_app(**options: Any) -> veter.App:
    app = veter.App()
    app.middleware(compress(**options))

    @app.get("/text")
    def text(request: veter.Request) -> str:
        return TEXT

    @app.get("/small")
    def small(request: veter.Request) -> str:
        return "tiny"

    @app.get("/json")
    def json(request: veter.Request) -> list[int]:
        return list(range(1000))

    @app.get("/png")
    def png(request: veter.Request) -> veter.Response:
        return veter.Response(b"\x89PNG" + b"\x00" * 4000, content_type="image/png")

    @app.get("/tagged")
    def tagged(request: veter.Request) -> veter.Response:
        return veter.Response(TEXT, headers={"ETag": '"v1"', "Vary": "Cookie"})

    @app.get("/no-transform")
    def no_transform(request: veter.Request) -> veter.Response:
        return veter.Response(TEXT, headers={"Cache-Control": "public, no-transform"})

    @app.get("/encoded")
    def encoded(request: veter.Request) -> veter.Response:
        return veter.Response(gzip.compress(TEXT.encode()), headers={"Content-Encoding": "gzip"})

    @app.get("/stream")
    def stream(request: veter.Request) -> StreamingResponse:
        async def events() -> AsyncIterator[str]:
            for i in range(5):
                yield f"data: {i} {'x' * 100}\n\n"

        return StreamingResponse(events(), content_type="text/event-stream")

    return app


def get(client: TestClient, path: str, accept: str | None) -> Any:
    headers = {"Accept-Encoding": accept} if accept is not None else {}
    return client.get(path, headers=headers)


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        ("gzip", "gzip"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("br;q=1.0, gzip;q=0.8", "br"),
        ("gzip;q=1, br;q=0.5, zstd;q=0.2", "gzip"),
        ("*", "zstd"),
        ("*;q=0.5, gzip;q=0", "zstd"),
        ("identity", None),
        ("gzip;q=0", None),
        ("gzip;q=bogus", None),
        ("gzip;q=2", None),
        ("", None),
    ],
)
def test_negotiation(accept: str, coding: str | None) -> None:
    assert negotiate(accept, ["zstd", "br", "gzip"]) == coding


def decode(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "br":
        out: bytes = brotli.decompress(data)
        return out
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_each_coding_round_trips(coding: str) -> None:
    with TestClient(make_app()) as client:
        r = get(client, "/text", coding)
    assert r.headers["content-encoding"] == coding and r.headers["vary"] == "Accept-Encoding"
    assert len(r.content) < len(TEXT) // 4
    assert int(r.headers["content-length"]) == len(r.content)
    assert decode(coding, r.content) == TEXT.encode()


def test_json_is_compressed() -> None:
    with TestClient(make_app()) as client:
        r = get(client, "/json", "gzip")
    assert r.headers["content-encoding"] == "gzip"
    assert gzip.decompress(r.content) == str(list(range(1000))).replace(" ", "").encode()


@pytest.mark.parametrize(
    ("path", "vary"),
    [
        ("/small", None),
        ("/png", None),
        ("/no-transform", None),
        ("/encoded", None),
    ],
)
def test_left_alone(path: str, vary: str | None) -> None:
    with TestClient(make_app()) as client:
        plain = get(client, path, None)
        r = get(client, path, "gzip, br, zstd")
    assert r.content == plain.content
    assert r.headers.get("vary") == vary
    if path != "/encoded":
        assert "content-encoding" not in r.headers


def test_without_accept_encoding_the_answer_still_varies() -> None:
    with TestClient(make_app()) as client:
        r = get(client, "/text", None)
    assert r.text == TEXT and "content-encoding" not in r.headers
    assert r.headers["vary"] == "Accept-Encoding"


def test_strong_etag_becomes_weak_and_vary_is_extended() -> None:
    with TestClient(make_app()) as client:
        r = get(client, "/tagged", "gzip")
        plain = get(client, "/tagged", "identity")
    assert r.headers["etag"] == 'W/"v1"' and r.headers["vary"] == "Cookie, Accept-Encoding"
    assert plain.headers["etag"] == '"v1"'


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_streamed_answer_is_compressed_piece_by_piece(coding: str) -> None:
    with TestClient(make_app()) as client:
        r = get(client, "/stream", coding)
    assert r.headers["content-encoding"] == coding
    assert r.headers.get("transfer-encoding") == "chunked"
    expected = "".join(f"data: {i} {'x' * 100}\n\n" for i in range(5)).encode()
    assert decode(coding, r.content) == expected


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_each_streamed_piece_is_decodable_when_it_is_sent(coding: str) -> None:
    # Flushed per piece: a client decoding bytes as they arrive has each event at
    # once, not when a compressor's buffer fills.
    makers = {"gzip": _gzip(6), "br": _brotli(4), "zstd": _zstd(3)}
    made = makers[coding]
    assert made is not None
    stream = made.stream()
    decoders: dict[str, Any] = {
        "gzip": zlib.decompressobj(31),
        "br": brotli.Decompressor(),
        "zstd": zstandard.ZstdDecompressor().decompressobj(),
    }
    decoder = decoders[coding]
    decompress = decoder.process if coding == "br" else decoder.decompress
    for i in range(3):
        piece = f"data: event {i}\n\n".encode()
        assert decompress(stream.piece(piece)) == piece
    decompress(stream.finish())


def test_large_bodies_go_through_the_thread_pool() -> None:
    big = "0123456789abcdef" * 100_000
    app = make_app(thread_threshold=1000)

    @app.get("/big")
    def big_answer(request: veter.Request) -> str:
        return big

    with TestClient(app) as client:
        r = get(client, "/big", "gzip")
    assert gzip.decompress(r.content) == big.encode()


def test_encodings_can_be_limited() -> None:
    with TestClient(make_app(encodings=["gzip"])) as client:
        assert get(client, "/text", "zstd, br, gzip;q=0.1").headers["content-encoding"] == "gzip"
        assert "content-encoding" not in get(client, "/text", "zstd, br").headers


def test_installed_codings_are_offered() -> None:
    assert available_encodings() == ["zstd", "br", "gzip"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"gzip_level": 0}, "gzip_level must be an int from 1 to 9"),
        ({"brotli_quality": 12}, "brotli_quality"),
        ({"zstd_level": 23}, "zstd_level"),
        ({"minimum_size": -1}, "minimum_size must be an int >= 0"),
        ({"encodings": ["deflate"]}, "unknown encoding 'deflate'"),
        ({"encodings": []}, "no encoding to offer"),
    ],
)
def test_bad_configuration_fails_at_setup(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compress(**options)


def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "brotli", None)
    with pytest.raises(ValueError, match="'br' needs the 'brotli' package"):
        compress(encodings=["br"])
    assert "br" not in available_encodings()
