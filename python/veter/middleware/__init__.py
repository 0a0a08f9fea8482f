"""Middleware that ships with veter: each a factory returning an ``async def
mw(request, call_next)`` for ``app.middleware(...)``.

- ``cors(...)``: Cross-Origin Resource Sharing (preflights and the response headers).
- ``compress(...)``: gzip, brotli and zstd answers negotiated from Accept-Encoding.
- ``trusted_hosts([...])``: 400 for requests naming a host the service does not serve.
"""

from veter.middleware.compression import compress
from veter.middleware.cors import cors
from veter.middleware.hosts import trusted_hosts

__all__ = ["compress", "cors", "trusted_hosts"]
