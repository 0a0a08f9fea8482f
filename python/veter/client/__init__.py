"""veter's HTTP client for calling other services (``pip install veter[client]``).

    from veter.client import HttpClient, Retries, Timeouts
    http = HttpClient(app, timeouts=Timeouts(connect=1, read=5, total=10, dns=1))

See ``HttpClient`` and docs/toolkit.md.
"""

from veter.client.errors import (
    ClientConnectionError,
    ClientError,
    ClientTimeout,
    HttpStatusError,
    ResponseTooLarge,
)
from veter.client.http import HttpClient
from veter.client.response import ClientResponse
from veter.client.settings import IDEMPOTENT_METHODS, Retries, Timeouts

__all__ = [
    "IDEMPOTENT_METHODS",
    "ClientConnectionError",
    "ClientError",
    "ClientResponse",
    "ClientTimeout",
    "HttpClient",
    "HttpStatusError",
    "ResponseTooLarge",
    "Retries",
    "Timeouts",
]
