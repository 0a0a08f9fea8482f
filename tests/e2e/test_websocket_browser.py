"""A real browser: headless Chromium (Debian's, driven by Playwright) loads a page
from the test app, opens a WebSocket to it, and exchanges JSON messages with
permessage-deflate negotiated, as every browser offers it."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from typing import Any

import pytest

import veter
from veter import WebSocket

from .conftest import RunningServer

Serve = Callable[..., RunningServer]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without these, Chromium reaches for Google's hosts at start, which this closed
# network refuses (see the machine notes); none changes what the page does.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>veter WebSocket</title>
<script>
const ws = new WebSocket(`ws://${location.host}/echo`);
const echoes = [];
const sent = [];
ws.onopen = () => {
  for (let i = 0; i < 20; i++) {
    const message = JSON.stringify({i, text: "héllo wörld ".repeat(i * 20), list: [...Array(i).keys()]});
    sent.push(message);
    ws.send(message);
  }
};
ws.onmessage = (event) => {
  echoes.push(event.data);
  if (echoes.length === sent.length) {
    window.result = {extensions: ws.extensions, sent, echoes};
    ws.close(1000, "done");
  }
};
ws.onerror = () => { window.result = {error: "websocket error"}; };
</script>
"""


def make_app(seen: dict[str, Any]) -> veter.App:
    app = veter.App()

    @app.get("/")
    def page(request: veter.Request) -> veter.Response:
        return veter.Response(PAGE, content_type="text/html; charset=utf-8")

    @app.websocket("/echo")
    async def echo(ws: WebSocket) -> None:
        seen["offer"] = ws.headers.get("sec-websocket-extensions")
        await ws.accept()
        seen["agreed"] = ws.extensions
        try:
            async for message in ws:
                await ws.send(message)
        finally:
            seen["compressed"] = ws._protocol.compressed_counts
            seen["ended"].set()

    return app


@pytest.mark.timeout(120)
def test_chromium_talks_to_veter_with_deflate(serve: Serve) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    assert shutil.which(CHROMIUM), "Chromium is needed (scripts/install-services.sh installs it)"
    seen: dict[str, Any] = {"ended": threading.Event()}
    server = serve(make_app(seen))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.port}/")
            page.wait_for_function("window.result !== undefined", timeout=30_000)
            result = page.evaluate("window.result")
        finally:
            browser.close()
    assert "error" not in result, result
    assert "permessage-deflate" in (seen["offer"] or "")
    assert result["extensions"] == seen["agreed"] == "permessage-deflate; server_max_window_bits=12"
    assert result["echoes"] == result["sent"]
    assert [json.loads(m)["i"] for m in result["echoes"]] == list(range(20))
    # Both ways on the wire: Chromium compresses what it sends; veter compresses the
    # echoes of at least 128 bytes (all but the first few).
    assert seen["ended"].wait(10)
    received, sent = seen["compressed"]
    assert received > 0 and sent >= 15, seen["compressed"]
