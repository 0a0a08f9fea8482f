"""Robyn (Rust runtime, Python handlers), one process and one worker."""

import os

from robyn import Robyn, jsonify

app = Robyn(__file__)


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/json")
def json_(request):
    return jsonify({"message": "Hello, World!"})


if __name__ == "__main__":
    app.start(host="127.0.0.1", port=int(os.environ["PORT"]))
