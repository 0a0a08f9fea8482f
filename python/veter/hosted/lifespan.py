"""The ASGI lifespan protocol (spec 2.0), run once per worker around serving.

``startup`` calls the app with a ``lifespan`` scope and sends it
``lifespan.startup``; the worker serves once the app answers
``lifespan.startup.complete``. ``shutdown`` sends ``lifespan.shutdown`` and waits
for ``lifespan.shutdown.complete``. The scope's ``state`` dict is what every
request's ``scope["state"]`` is copied from.

Modes, as uvicorn's ``--lifespan``: ``on`` (an app that fails or does not speak
the protocol stops the worker), ``off`` (never called) and ``auto`` (an app that
raises before answering ``startup`` is taken not to speak it: serving goes on).
An app that answers ``lifespan.startup.failed`` stops the worker in every mode,
with its message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["Lifespan", "LifespanFailed"]

log = logging.getLogger("veter.asgi")

Message = MutableMapping[str, Any]
AsgiCallable = Callable[
    [Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class LifespanFailed(RuntimeError):
    """The app's lifespan startup or shutdown failed (the message is the app's)."""


class Lifespan:
    """One run of the lifespan protocol for ``app``, in ``mode`` (auto, on, off)."""

    def __init__(self, app: AsgiCallable, mode: str) -> None:
        self.app = app
        self.mode = mode
        #: Shared into every request's scope (``scope["state"]``).
        self.state: dict[str, Any] = {}
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._answers: asyncio.Queue[Message | BaseException | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._speaks = False

    async def startup(self) -> None:
        if self.mode == "off":
            return
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._task = asyncio.get_running_loop().create_task(self._run(scope))
        await self._inbox.put({"type": "lifespan.startup"})
        answer = await self._answers.get()
        if isinstance(answer, BaseException) or answer is None:
            if self.mode == "on":
                raise LifespanFailed(_failure("startup", answer))
            # auto: an app that does not speak lifespan raises (or returns) at once.
            log.info(
                "the ASGI app does not use lifespan (%s); serving without it", _failure("startup", answer)
            )
            self._task = None
            return
        if answer["type"] == "lifespan.startup.failed":
            raise LifespanFailed(f"ASGI lifespan startup failed: {answer.get('message', '')}")
        self._speaks = True

    async def shutdown(self) -> None:
        if not self._speaks or self._task is None:
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        answer = await self._answers.get()
        task, self._task = self._task, None
        if isinstance(answer, BaseException) or answer is None:
            raise LifespanFailed(_failure("shutdown", answer))
        if answer["type"] == "lifespan.shutdown.failed":
            raise LifespanFailed(f"ASGI lifespan shutdown failed: {answer.get('message', '')}")
        await asyncio.wait([task], timeout=1.0)

    async def _run(self, scope: Message) -> None:
        try:
            await self.app(scope, self._receive, self._send)
        except BaseException as exc:  # handed to whoever waits for an answer
            await self._answers.put(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            await self._answers.put(None)

    async def _receive(self) -> Message:
        return await self._inbox.get()

    async def _send(self, message: Message) -> None:
        kind = message.get("type") if isinstance(message, MutableMapping) else None
        allowed = (
            "lifespan.startup.complete",
            "lifespan.startup.failed",
            "lifespan.shutdown.complete",
            "lifespan.shutdown.failed",
        )
        if kind not in allowed:
            raise ValueError(f"ASGI lifespan message type {kind!r} is not one of {', '.join(allowed)}")
        await self._answers.put(message)


def _failure(phase: str, answer: BaseException | None) -> str:
    if answer is None:
        return f"the app returned before answering lifespan.{phase}"
    return f"the app raised {type(answer).__name__}: {answer}"
