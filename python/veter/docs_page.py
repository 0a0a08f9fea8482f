"""The interactive API docs page: Swagger UI on the app's OpenAPI document.

Swagger UI's files come from the ``swagger-ui-py`` package
(``pip install veter[docs]``), never from a CDN: the page works on a closed network.
Without the package an app serves only its document, unless it set ``docs_path``.
The page and its three assets are answered from memory, read once at startup.
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path
from typing import Any

from veter.responses import Response

__all__ = ["ASSETS", "INSTALL_HINT", "DocsPage", "assets_directory", "find_assets"]

#: The Swagger UI files the page loads, and their types.
ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


#: How to get the page's files, said wherever their absence is reported.
INSTALL_HINT = "pip install 'veter[docs]' (or OpenAPI(docs_path=None) to serve only the document)"


def find_assets() -> Path | None:
    """Where swagger-ui-py keeps Swagger UI's files; None when it is not installed
    (found without importing it)."""
    spec = importlib.util.find_spec("swagger_ui")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        static = Path(location) / "static"
        if all((static / name).is_file() for name in ASSETS):
            return static
    return None


def assets_directory() -> Path:
    """Where swagger-ui-py keeps Swagger UI's files; a clear error without it."""
    directory = find_assets()
    if directory is None:
        raise RuntimeError(
            f"the API docs page needs Swagger UI's files from the swagger-ui-py package: {INSTALL_HINT}"
        )
    return directory


class DocsPage:
    """The page at ``docs_path`` and its assets at ``docs_path/assets/{name}``."""

    def __init__(self, title: str, document_path: str, docs_path: str) -> None:
        directory = assets_directory()
        self._assets = {name: (directory / name).read_bytes() for name in ASSETS}
        assets = f"{docs_path.rstrip('/')}/assets"
        self._page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} - API docs</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="{assets}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({{
  url: {json.dumps(document_path)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
}});
</script>
</body>
</html>
""".encode()

    def page(self, request: Any) -> Response:
        return Response(self._page, content_type="text/html; charset=utf-8")

    def asset(self, request: Any, name: str) -> Response:
        body = self._assets.get(name)
        if body is None:
            return Response("Not Found", status=404)
        return Response(body, content_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})
