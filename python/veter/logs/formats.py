"""Application log records in the access log's formats, each carrying the id of the
request it was made for.

``RequestIdFilter`` sets ``record.request_id`` from ``veter.context`` (``"-"``
outside a request), so any handler and format can use it; ``configure`` installs
veter's setup when the application has not configured logging itself.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from veter._core import LogFile
from veter.context import current_request_id
from veter.logs.files import open_log

__all__ = ["JsonFormatter", "LogFileHandler", "RequestIdFilter", "TextFormatter", "configure"]


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (the current request's id, or ``"-"``) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id() or "-"
        return True


def _utc(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(record.msecs):03d}Z"


class TextFormatter(logging.Formatter):
    """``time level pid logger [request_id] message``, then the traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = (
            f"{_utc(record)} {record.levelname} {record.process} {record.name} "
            f"[{getattr(record, 'request_id', '-')}] {message}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


#: LogRecord attributes that are not "extra" fields given by the caller.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "request_id"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, pid, request_id, message, the
    caller's ``extra`` fields, and ``exc`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _utc(record),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in data:
                data[key] = value
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(data, default=repr).decode()


class LogFileHandler(logging.Handler):
    """Writes each record whole (one ``write``) to a ``LogFile``: safe when several
    processes share the destination."""

    def __init__(self, logfile: LogFile, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.logfile = logfile

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.logfile.write(self.format(record))
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)

    def flush(self) -> None:
        self.logfile.flush()


def configure(*, log_format: str = "text", log_level: str = "info", log_file: str | None = None) -> bool:
    """Set up application logging (records with request ids, in ``log_format``, to
    ``log_file`` or stderr) unless the application configured the root logger
    itself. Returns whether veter's setup was installed."""
    root = logging.getLogger()
    if any(not isinstance(h, LogFileHandler) for h in root.handlers):
        # The application chose its own handlers; still give them request ids.
        for handler in root.handlers:
            if not any(isinstance(f, RequestIdFilter) for f in handler.filters):
                handler.addFilter(RequestIdFilter())
        return False
    for handler in list(root.handlers):
        root.removeHandler(handler)
    sys.stderr.flush()
    handler = LogFileHandler(open_log(log_file or "stderr", buffer_bytes=1))
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    root.addHandler(handler)
    root.setLevel(log_level.upper())
    return True
