"""Waiting for a condition that other tasks make true: poll it, never sleep a guess."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

POLL_INTERVAL = 0.005


async def eventually(predicate: Callable[[], bool], within: float = 30.0, what: str = "condition") -> None:
    """Return once ``predicate()`` is true; fail after ``within`` seconds."""
    try:
        async with asyncio.timeout(within):
            while not predicate():  # noqa: ASYNC110 - the state is plain attributes, not an Event
                await asyncio.sleep(POLL_INTERVAL)
    except TimeoutError:
        raise AssertionError(f"{what} did not happen within {within} s") from None
