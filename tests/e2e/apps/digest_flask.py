"""tests/e2e/apps/digest.py's answers from a Flask app (served as WSGI)."""

from __future__ import annotations

from flask import Flask, Response, request

from .digest import answer

app = Flask(__name__)


@app.route("/", methods=["GET", "POST"])
def digest() -> Response:
    body = request.get_data()
    status, text, headers = answer(
        request.args.get("i", ""),
        body,
        request.headers.get("X-Body-Sha256"),
        request.environ["SERVER_PROTOCOL"].removeprefix("HTTP/"),
        request.headers.get("Connection"),
        request.headers.get("X-Forwarded-For"),
        int(request.environ["REMOTE_PORT"]),
    )
    return Response(text, status=status, headers=headers, mimetype="text/plain")
