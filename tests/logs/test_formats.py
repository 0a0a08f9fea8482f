"""Application log records: text and JSON, request id on each, veter's setup only
when the application did not configure logging itself."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from veter.context import request_var
from veter.logs import JsonFormatter, RequestIdFilter, TextFormatter, configure
from veter.logs.formats import LogFileHandler


def record(message: str = "hello %s", *args: object, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("app.x", logging.WARNING, __file__, 1, message, args or ("world",), None)
    for key, value in extra.items():
        setattr(rec, key, value)
    RequestIdFilter().filter(rec)
    return rec


def test_text_and_json_lines() -> None:
    token = request_var.set(SimpleNamespace(id="rid-7"))  # type: ignore[arg-type]
    try:
        rec = record(user="ann")
    finally:
        request_var.reset(token)
    text = TextFormatter().format(rec)
    assert text.endswith(f" WARNING {rec.process} app.x [rid-7] hello world")
    data = orjson.loads(JsonFormatter().format(rec))
    assert data["request_id"] == "rid-7" and data["message"] == "hello world"
    assert data["level"] == "WARNING" and data["logger"] == "app.x" and data["user"] == "ann"
    assert data["time"].endswith("Z") and "T" in data["time"]
    assert record().request_id == "-"  # type: ignore[attr-defined]


def test_tracebacks_stay_in_one_record() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        rec = logging.LogRecord("a", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    RequestIdFilter().filter(rec)
    assert "RuntimeError: boom" in TextFormatter().format(rec)
    line = JsonFormatter().format(rec)
    assert "\n" not in line and "RuntimeError: boom" in orjson.loads(line)["exc"]


@pytest.fixture
def clean_root() -> Iterator[logging.Logger]:
    """The root logger, emptied when the test starts (after pytest added its own
    capture handlers), restored afterwards."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved:
        root.addHandler(handler)
    root.setLevel(level)


def empty(root: logging.Logger) -> None:
    for handler in list(root.handlers):
        root.removeHandler(handler)


def test_configure_installs_veter_setup(clean_root: logging.Logger, tmp_path: Path) -> None:
    empty(clean_root)
    path = tmp_path / "app.log"
    assert configure(log_format="json", log_level="warning", log_file=str(path))
    logging.getLogger("x").info("dropped: below the level")
    logging.getLogger("x").warning("kept")
    line = orjson.loads(path.read_text())
    assert line["message"] == "kept" and line["request_id"] == "-"
    assert [type(h) for h in clean_root.handlers] == [LogFileHandler]
    assert configure(log_file=str(path)), "configuring again replaces veter's own handler"
    assert len(clean_root.handlers) == 1


def test_configure_respects_the_applications_own_handlers(clean_root: logging.Logger) -> None:
    empty(clean_root)
    mine = logging.StreamHandler()
    clean_root.addHandler(mine)
    assert not configure()
    assert clean_root.handlers == [mine]
    assert any(isinstance(f, RequestIdFilter) for f in mine.filters), "its records still get request ids"
