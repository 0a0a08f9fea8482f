"""``AsgiApp``: an ASGI 3 app served by veter as if it were a ``veter.App``.

The server, the supervisor, the drain and the toolkit see an ``App``: settings,
startup and shutdown (the app's lifespan), readiness, the core's dispatcher. The
core calls the hosted app itself for every request; routes, middleware and
exception handlers of veter's own are not used (the app has its own).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from veter import _core
from veter.app import App
from veter.config import ServerConfig
from veter.exceptions import HTTPException
from veter.hosted import websocket
from veter.hosted.lifespan import AsgiCallable, Lifespan
from veter.responses import Response
from veter.websockets import WebSocketSettings, entry_for

__all__ = ["AsgiApp"]

log = logging.getLogger("veter.asgi")


class AsgiApp(App):
    """Serves ``app``, an ASGI 3 callable (``veter run module:app`` makes one)."""

    hosted = True
    #: What the app speaks, for messages.
    interface = "ASGI"

    def __init__(self, app: AsgiCallable, **settings: Any) -> None:
        super().__init__(**settings)
        self.asgi_app = app
        self._lifespan: Lifespan | None = None

    def add_route(self, *args: Any, **kwargs: Any) -> Any:
        """Only veter's own (``/metrics``): the app has its own routes."""
        if str(kwargs.get("name") or "").startswith("veter."):
            return super().add_route(*args, **kwargs)
        raise RuntimeError(f"a hosted {self.interface} app has its own routes: add them to it, not to veter")

    async def startup(self) -> None:
        """The app's lifespan startup, then veter's own startup hooks."""
        config = self._serving_config
        self._lifespan = Lifespan(self.asgi_app, config.lifespan)
        await self._lifespan.startup()
        await super().startup()

    async def shutdown(self) -> None:
        """veter's shutdown hooks, then the app's lifespan shutdown."""
        try:
            await super().shutdown()
        finally:
            if self._lifespan is not None:
                await self._lifespan.shutdown()

    def handle_error(self, request: Any, exc: BaseException) -> Response:
        """What the app raised before answering: logged (with the request id), 500;
        an ``HTTPException`` of veter's (from ``receive``: a chunked body over
        ``max_body_bytes``, or one too slow) answers its own status."""
        if isinstance(exc, HTTPException):
            return Response(exc.detail, status=exc.status)
        log.error(
            "%s app failed on %s %s: %s",
            self.interface,
            getattr(request, "method", "?"),
            getattr(request, "path", "?"),
            exc,
            exc_info=(type(exc), exc, exc.__traceback__),
            # Called by the core outside the request's context: its id is given here.
            extra={"request_id": getattr(request, "id", None) or "-"},
        )
        return Response("Internal Server Error", status=500)

    def build_dispatcher(
        self, config: ServerConfig | None = None, *, access_log: _core.LogFile | None = None
    ) -> _core.Dispatcher:
        config = config or self.config
        self._serving_config = config
        self._frozen = True
        state = self._lifespan.state if self._lifespan is not None else {}
        return _core.Dispatcher(
            self._endpoints(),  # veter's own (the metrics path), taken before the app
            self,
            self.handle_error,
            config,
            access_log=access_log,
            asgi=(
                self.asgi_app,
                config.root_path,
                state,
                self.websocket_entry(),
                self.wsgi_entry(config.root_path),
            ),
        )

    def wsgi_entry(
        self, root_path: str
    ) -> tuple[Callable[[dict[str, Any], _core.AsgiCycle], None], dict[str, Any]] | None:
        """None: an ASGI app is called with a scope (``WsgiApp`` gives its pool's
        entry here)."""
        return None

    def websocket_entry(self) -> Any:
        """What the core calls for a WebSocket handshake: veter's WebSocket route
        entry around the app (``veter.hosted.websocket``)."""
        handler = functools.partial(websocket.serve, self.asgi_app)
        return entry_for(handler, WebSocketSettings(), self._config, self.websockets)
