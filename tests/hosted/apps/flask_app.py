"""A Flask service as teams write them: routes, JSON, forms and uploads, streamed
answers and server-sent events, files, blocking calls, errors.

``app`` is the plain app; ``validated`` is the same app inside
``wsgiref.validate.validator``, which checks the server's side of PEP 3333 on
every call (the tests serve both).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any
from wsgiref.validate import validator

from flask import Flask, Response, abort, request, send_file, stream_with_context

app = Flask(__name__)
seen: dict[str, int] = {"closed_streams": 0}
lock = threading.Lock()

FILE = os.path.join(tempfile.gettempdir(), f"veter-flask-file-{os.getpid()}.bin")
with open(FILE, "wb") as fh:
    fh.write(bytes(range(256)) * 4096)  # 1 MiB


@app.get("/")
def root() -> dict[str, str]:
    return {"hello": "world"}


@app.get("/plaintext")
def plaintext() -> Response:
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/items/<int:item_id>")
def read_item(item_id: int) -> dict[str, Any]:
    return {"item_id": item_id, "q": request.args.get("q")}


@app.post("/items")
def create_item() -> tuple[dict[str, Any], int]:
    data = request.get_json()
    if not isinstance(data, dict) or "name" not in data:
        abort(400, "name is required")
    return data, 201


@app.get("/environ")
def environ() -> dict[str, Any]:
    env = request.environ
    return {
        "request_id": env.get("veter.request_id"),
        "script_name": env["SCRIPT_NAME"],
        "path_info": env["PATH_INFO"],
        "query": env["QUERY_STRING"],
        "protocol": env["SERVER_PROTOCOL"],
        "scheme": env["wsgi.url_scheme"],
        "multithread": env["wsgi.multithread"],
        "remote": env.get("REMOTE_ADDR"),
        "thread": threading.current_thread().name,
    }


@app.post("/form")
def form() -> dict[str, Any]:
    return {"name": request.form["name"], "age": int(request.form["age"])}


@app.post("/upload")
def upload() -> dict[str, Any]:
    f = request.files["file"]
    data = f.read()
    return {
        "filename": f.filename,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "note": request.form["note"],
    }


@app.post("/consume")
def consume() -> dict[str, int]:
    total = 0
    stream = request.stream
    while chunk := stream.read(1 << 16):
        total += len(chunk)
    return {"total": total}


@app.get("/stream")
def stream() -> Response:
    def pieces() -> Iterator[str]:
        for i in range(5):
            yield f"piece {i}\n"

    return Response(stream_with_context(pieces()), mimetype="text/plain")


@app.get("/sse")
def sse() -> Response:
    def events() -> Iterator[str]:
        for i in range(3):
            yield f"data: {i}\n\n"

    return Response(events(), mimetype="text/event-stream")


@app.get("/forever")
def forever() -> Response:
    def ticks() -> Iterator[str]:
        try:
            i = 0
            while True:
                yield f"tick {i}\n"
                i += 1
                time.sleep(0.01)
        finally:
            with lock:
                seen["closed_streams"] += 1

    return Response(ticks(), mimetype="text/plain")


@app.get("/seen")
def get_seen() -> dict[str, int]:
    return dict(seen)


@app.get("/file")
def file() -> Response:
    return send_file(FILE, mimetype="application/octet-stream")


@app.get("/sleep")
def sleep() -> str:
    time.sleep(float(request.args.get("s", "0.2")))
    return "slept"


@app.get("/fail")
def fail() -> str:
    raise RuntimeError("the view failed")


@app.get("/abort")
def aborted() -> str:
    abort(418)


validated = validator(app)
