"""Logging that loses nothing across workers: the access log, application logs with
request ids, and rotation.

- ``files``: opening log destinations (``LogFile`` objects from the core) and
  reopening them all after a rotation;
- ``formats``: text and JSON formatters and the filter that adds ``request_id``;
- ``rotation``: renaming files by size or age (done by one process: the master).
"""

from veter.logs.files import open_log, reopen_all
from veter.logs.formats import JsonFormatter, RequestIdFilter, TextFormatter, configure
from veter.logs.rotation import Rotator

__all__ = [
    "JsonFormatter",
    "RequestIdFilter",
    "Rotator",
    "TextFormatter",
    "configure",
    "open_log",
    "reopen_all",
]
