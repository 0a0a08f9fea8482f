"""Server-Sent Events: ``EventSourceResponse`` streams events to an ``EventSource``.

Each item the source yields becomes one event: a ``str`` is its data, an ``Event``
may also carry an event name, an id and a reconnection delay, and a ``dict`` or
``list`` is sent as JSON data. While the source has nothing to send, a comment
line (``: ping``) goes out every ``ping`` seconds, so proxies and load balancers
that close idle connections keep this one open, and a client that went away is
noticed (its generator is then closed, like any streamed response's).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from veter.streaming import StreamingResponse

__all__ = ["Event", "EventSourceResponse"]

DEFAULT_PING = 15.0


@dataclass(frozen=True)
class Event:
    """One event. ``data`` may span lines (each becomes a ``data:`` line)."""

    data: str
    event: str | None = None
    id: str | None = None
    #: Milliseconds the client should wait before reconnecting.
    retry: int | None = None

    def encode(self) -> bytes:
        lines = []
        for name, value in (("event", self.event), ("id", self.id)):
            if value is not None:
                if "\n" in value or "\r" in value:
                    raise ValueError(f"an event's {name} cannot contain a line break: {value!r}")
                lines.append(f"{name}: {value}")
        if self.retry is not None:
            if not isinstance(self.retry, int) or self.retry < 0:
                raise ValueError(f"retry must be a non-negative int (milliseconds), got {self.retry!r}")
            lines.append(f"retry: {self.retry}")
        lines.extend(
            f"data: {line}" for line in self.data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        )
        return ("\n".join(lines) + "\n\n").encode()


def _as_event(item: Any) -> Event:
    if isinstance(item, Event):
        return item
    if isinstance(item, str):
        return Event(item)
    if isinstance(item, (dict, list)):
        return Event(orjson.dumps(item).decode())
    raise TypeError(f"an event source yields str, dict, list or veter.sse.Event, not {type(item).__name__}")


class EventSourceResponse(StreamingResponse):
    """A ``text/event-stream`` response fed by ``source`` (an async iterable, usually
    an async generator), with a ``: ping`` comment every ``ping`` seconds of silence
    (None: no pings)."""

    def __init__(
        self,
        source: AsyncIterable[Any],
        *,
        ping: float | None = DEFAULT_PING,
        status: int = 200,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    ) -> None:
        if not isinstance(source, AsyncIterable):
            raise TypeError("an event source must be an async iterable (an async generator)")
        if ping is not None and not ping > 0:
            raise ValueError(f"ping must be a positive number of seconds or None, got {ping!r}")
        self.source = source
        self.ping = ping
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        defaults = [("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
        given = [(str(n), str(v)) for n, v in items]
        names = {n.lower() for n, _ in given}
        merged = given + [(n, v) for n, v in defaults if n.lower() not in names]
        super().__init__(self._events(), status=status, headers=merged, content_type="text/event-stream")

    async def _events(self) -> AsyncIterator[bytes]:
        iterator = aiter(self.source)
        pending: asyncio.Future[Any] | None = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(iterator))
                done, _ = await asyncio.wait({pending}, timeout=self.ping)
                if not done:
                    yield b": ping\n\n"
                    continue
                try:
                    item = pending.result()
                except StopAsyncIteration:
                    return
                finally:
                    pending = None
                yield _as_event(item).encode()
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
