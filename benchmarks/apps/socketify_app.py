"""socketify.py (uWebSockets through CFFI)."""

import os

from socketify import App, AppListenOptions


def plaintext(res, req):
    res.send("Hello, World!", content_type=b"text/plain; charset=utf-8")


def json_(res, req):
    res.send({"message": "Hello, World!"})


app = App()
app.get("/", plaintext)
app.get("/json", json_)
app.listen(AppListenOptions(port=int(os.environ["PORT"]), host="127.0.0.1"))
app.run()
