"""An app for the access-log tests: a fast route and health probes."""

from __future__ import annotations

import veter
from veter import health

app = veter.App()
health.enable(app)


@app.get("/")
def hello(request: veter.Request) -> str:
    return "hi"
