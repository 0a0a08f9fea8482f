"""The lifespan protocol as a worker runs it: state shared, failures stop the worker
with the app's message, and ``auto`` tolerates apps that do not speak it."""

from __future__ import annotations

from typing import Any

import pytest

from veter.hosted.lifespan import Lifespan, LifespanFailed

pytestmark = pytest.mark.asyncio

calls: list[str] = []


async def speaks(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "lifespan"
    assert scope["asgi"]["version"] == "3.0"
    message = await receive()
    assert message["type"] == "lifespan.startup"
    scope["state"]["db"] = "pool"
    calls.append("startup")
    await send({"type": "lifespan.startup.complete"})
    message = await receive()
    assert message["type"] == "lifespan.shutdown"
    calls.append("shutdown")
    await send({"type": "lifespan.shutdown.complete"})


async def refuses(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "lifespan.startup.failed", "message": "no database"})


async def http_only(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "http", "only http"


async def fails_shutdown(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "lifespan.startup.complete"})
    await receive()
    await send({"type": "lifespan.shutdown.failed", "message": "flush failed"})


async def bad_message(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "lifespan.startup.done"})


async def test_startup_and_shutdown_share_state() -> None:
    calls.clear()
    lifespan = Lifespan(speaks, "auto")
    await lifespan.startup()
    assert lifespan.state == {"db": "pool"}
    await lifespan.shutdown()
    assert calls == ["startup", "shutdown"]


@pytest.mark.parametrize("mode", ["auto", "on"])
async def test_startup_failed_stops_the_worker_with_the_apps_message(mode: str) -> None:
    with pytest.raises(LifespanFailed, match=r"ASGI lifespan startup failed: no database"):
        await Lifespan(refuses, mode).startup()


async def test_auto_serves_an_app_without_lifespan() -> None:
    lifespan = Lifespan(http_only, "auto")
    await lifespan.startup()
    await lifespan.shutdown()  # nothing to do


async def test_on_requires_lifespan() -> None:
    with pytest.raises(LifespanFailed, match=r"raised AssertionError: only http"):
        await Lifespan(http_only, "on").startup()


async def test_off_never_calls_the_app() -> None:
    calls.clear()
    await Lifespan(speaks, "off").startup()
    assert calls == []


async def test_shutdown_failure_is_reported() -> None:
    lifespan = Lifespan(fails_shutdown, "on")
    await lifespan.startup()
    with pytest.raises(LifespanFailed, match=r"shutdown failed: flush failed"):
        await lifespan.shutdown()


async def test_wrong_message_type_is_named() -> None:
    with pytest.raises(LifespanFailed, match=r"'lifespan\.startup\.done' is not one of"):
        await Lifespan(bad_message, "on").startup()
