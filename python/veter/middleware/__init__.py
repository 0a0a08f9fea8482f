"""Middleware that ships with veter: each a factory returning an ``async def
mw(request, call_next)`` for ``app.middleware(...)``.

- ``cors(...)``: Cross-Origin Resource Sharing (preflights and the response headers).
- ``compress(...)``: gzip, brotli and zstd answers negotiated from Accept-Encoding.
"""

from veter.middleware.compression import compress
from veter.middleware.cors import cors

__all__ = ["compress", "cors"]
