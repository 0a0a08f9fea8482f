"""tests/e2e/apps/digest.py's answers from a ``veter.App``."""

from __future__ import annotations

import veter

from .digest import answer

app = veter.App()


@app.route("/", methods=["GET", "POST"])
async def digest(request: veter.Request) -> veter.Response:
    body = await request.body()
    status, text, headers = answer(
        request.query.get("i", ""),
        body,
        request.header("x-body-sha256"),
        request.http_version,
        request.header("connection"),
        request.header("x-forwarded-for"),
        request.client[1],
    )
    return veter.Response(text, status=status, headers=headers, content_type="text/plain")
