"""Japronto (Python 3.7 only; the project is unmaintained)."""

import os

from japronto import Application


def plaintext(request):
    return request.Response(text="Hello, World!")


def json_(request):
    return request.Response(json={"message": "Hello, World!"})


app = Application()
app.router.add_route("/", plaintext)
app.router.add_route("/json", json_)
app.run(host="127.0.0.1", port=int(os.environ["PORT"]), worker_num=1)
