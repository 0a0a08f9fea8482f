"""The differential fuzzer's instrumented WSGI app (tests/hosted/fuzz/): it does
what the request's query asks (tests/hosted/apps/probe.py) and records what it
received: the environ's fields, the body's length and digest, and what reading
``wsgi.input`` raised."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tests.hosted.apps.probe import FENCE_TIMEOUT, Behaviour, Store, digest

store = Store()

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
FIELDS = ("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "SERVER_PROTOCOL", "CONTENT_LENGTH", "CONTENT_TYPE")


def app(environ: Environ, start_response: StartResponse) -> Any:
    if environ["PATH_INFO"] == "/fence":
        store.wait_idle(FENCE_TIMEOUT)
        body = store.drain()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    behaviour = Behaviour.parse(environ.get("QUERY_STRING", ""))
    token = store.start(behaviour.id)
    record: dict[str, Any] = {"id": behaviour.id, "events": []}
    for name in FIELDS:
        record[name] = environ.get(name) or None
    record["headers"] = sorted([k, v] for k, v in environ.items() if k.startswith("HTTP_"))
    record["input_terminated"] = bool(environ.get("wsgi.input_terminated"))
    try:
        _read(environ["wsgi.input"], behaviour, record)
    except Exception as exc:
        record["events"].append(f"raised {type(exc).__name__}")
        store.finish(token, record)
        raise  # as a framework would: the server answers for a broken body
    store.finish(token, record)
    headers = [("Content-Type", "application/octet-stream"), ("X-Probe-Id", behaviour.id)]
    body = behaviour.body()
    if behaviour.answer == "one":
        start_response("200 OK", headers)
        return [body]
    if behaviour.answer == "sized":
        headers.append(("Content-Length", str(len(body))))
    start_response("200 OK", headers)
    return _pieces(behaviour.split())


def _pieces(pieces: list[bytes]) -> Iterator[bytes]:
    yield from pieces


def _read(stream: Any, behaviour: Behaviour, record: dict[str, Any]) -> None:
    if behaviour.read == "none":
        return
    limit = behaviour.part if behaviour.read == "part" else None
    data = bytearray()
    while limit is None or len(data) < limit:
        piece = stream.read(65536 if limit is None else limit - len(data))
        if not piece:
            record["events"].append("end")
            break
        data += piece
    record["body_len"] = len(data)
    record["body_sha"] = digest(bytes(data))
