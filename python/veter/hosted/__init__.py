"""Serving apps written for other interfaces on veter's core: ASGI 3 apps
(FastAPI, Starlette, Django, Litestar, Quart...) and WSGI apps (Flask, Django...)
through ``veter run module:app``.

``detect`` tells what an imported object is (``--interface``); ``AsgiApp`` wraps an
ASGI callable so that the server, the supervisor and the toolkit treat it as they
treat a ``veter.App``. The request path (scope, ``receive``, ``send``, the answer's
bytes) is in the Rust core (``src/asgi/``, ``src/protocol/asgi.rs``); only the
lifespan protocol, run once per worker, is here, and the WSGI bridge, which runs a
WSGI app in a thread pool on the same path. See docs/asgi.md.
"""

from veter.hosted.asgi import AsgiApp
from veter.hosted.detect import detect
from veter.hosted.wsgi import WsgiApp

__all__ = ["AsgiApp", "WsgiApp", "detect"]
