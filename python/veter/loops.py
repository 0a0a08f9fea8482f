"""Choosing the event loop: uvloop when available, stdlib asyncio otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["loop_factory"]


def loop_factory(name: str = "auto") -> Callable[[], asyncio.AbstractEventLoop]:
    """A factory for the loop named ``name`` ("auto", "uvloop" or "asyncio")."""
    if name in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if name == "uvloop":
                raise RuntimeError("loop 'uvloop' requested but uvloop is not installed") from None
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop
