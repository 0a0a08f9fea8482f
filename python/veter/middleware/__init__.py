"""Middleware that ships with veter: each a factory returning an ``async def
mw(request, call_next)`` for ``app.middleware(...)``.

- ``cors(...)``: Cross-Origin Resource Sharing (preflights and the response headers).
"""

from veter.middleware.cors import cors

__all__ = ["cors"]
