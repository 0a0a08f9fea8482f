"""The API docs page in a real browser: headless Chromium (Debian's, driven by
Playwright) renders the example service's operations from its OpenAPI document,
and "Try it out" on one route shows that route's answer. The same browser then
fetches from the service on another origin, as a page on another site would:
CORS lets the allowed origin read the answer and keeps another one out."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest

import veter
from veter.middleware import cors
from veter.params import Query

from .conftest import RunningServer
from .test_websocket_browser import CHROMIUM, FLAGS

Serve = Callable[..., RunningServer]


class Greeting(msgspec.Struct):
    text: str
    times: int


def make_api(allowed_origin: str) -> veter.App:
    app = veter.App(openapi=veter.OpenAPI(title="Greeter", version="1.0.0"))
    app.middleware(cors(allow_origins=[allowed_origin]))

    @app.get("/greet", tags=["greetings"])
    def greet(name: Annotated[str, Query(description="who")] = "world", times: int = 1) -> Greeting:
        """Greet someone."""
        return Greeting(text=f"hello {name}", times=times)

    @app.post("/echo", tags=["greetings"])
    def echo(greeting: Greeting) -> Greeting:
        """Echo a greeting."""
        return greeting

    return app


def make_site() -> veter.App:
    """A page on another origin that fetches from the API named in its query."""
    site = veter.App()

    @site.get("/")
    def page(request: veter.Request) -> veter.Response:
        api = request.query["api"]
        script = f"""<!doctype html><meta charset="utf-8"><script>
fetch("{api}/greet?name=site").then(r => r.json()).then(
  body => {{ window.result = {{ok: true, body}}; }},
  error => {{ window.result = {{ok: false, error: String(error)}}; }});
</script>"""
        return veter.Response(script, content_type="text/html; charset=utf-8")

    return site


@pytest.mark.timeout(180)
def test_docs_page_renders_and_tries_a_route_and_cors_holds(serve: Serve) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    assert shutil.which(CHROMIUM), "Chromium is needed (scripts/install-services.sh installs it)"
    site_allowed = serve(make_site())
    site_other = serve(make_site())
    api = serve(make_api(f"http://127.0.0.1:{site_allowed.port}"))
    api_url = f"http://127.0.0.1:{api.port}"
    results: dict[str, Any] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(f"{api_url}/docs")
            page.wait_for_selector(".opblock", timeout=30_000)
            results["operations"] = page.locator(".opblock-summary-path").all_inner_texts()
            results["title"] = page.locator("h2.title").inner_text()
            page.locator(".opblock-summary", has_text="/greet").first.click()
            page.locator("button.try-out__btn").first.click()
            page.locator("input[placeholder='name']").fill("browser")
            page.locator("button.execute").first.click()
            answer = page.locator(".live-responses-table .response-col_description pre").first
            answer.wait_for(timeout=30_000)
            results["answer"] = answer.inner_text()
            for name, server in (("allowed", site_allowed), ("other", site_other)):
                other = browser.new_page()
                other.goto(f"http://127.0.0.1:{server.port}/?api={api_url}")
                other.wait_for_function("window.result !== undefined", timeout=30_000)
                results[name] = other.evaluate("window.result")
        finally:
            browser.close()
    assert "Greeter" in results["title"]
    assert {text.replace("\u200b", "") for text in results["operations"]} == {"/greet", "/echo"}
    assert '"text": "hello browser"' in results["answer"]
    assert results["allowed"] == {"ok": True, "body": {"text": "hello site", "times": 1}}
    assert results["other"]["ok"] is False  # another origin cannot read the answer


@pytest.mark.timeout(180)
def test_the_catalog_examples_docs_page(serve: Serve) -> None:
    # examples/catalog.py, the typed example service: its page lists its operations
    # and "Try it out" on the listing returns the route's answer.
    sync_api = pytest.importorskip("playwright.sync_api")
    from examples.catalog import app

    api = serve(app)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{api.port}/docs")
            page.wait_for_selector(".opblock", timeout=30_000)
            operations = page.locator(".opblock-summary-path").all_inner_texts()
            listing = page.locator(".opblock-get .opblock-summary", has_text="/items").first
            listing.click()
            page.locator("button.try-out__btn").first.click()
            page.locator("input[placeholder='limit']").fill("5")
            page.locator("button.execute").first.click()
            answer = page.locator(".live-responses-table .response-col_description pre").first
            answer.wait_for(timeout=30_000)
            text = answer.inner_text()
        finally:
            browser.close()
    assert {o.replace("\u200b", "") for o in operations} == {
        "/items",
        "/items/{item_id}",
        "/items/{item_id}/image",
        "/search",
    }
    assert '"total"' in text and '"items"' in text
