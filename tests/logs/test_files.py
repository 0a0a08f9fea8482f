"""LogFile: whole lines, buffered until flushed, written in pieces a pipe keeps whole."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from veter._core import LogFile
from veter.logs import open_log, reopen_all


def test_lines_wait_for_flush_when_scheduled(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    log = LogFile(str(path))
    calls: list[int] = []
    log.set_scheduler(lambda: calls.append(1))
    log.write("one")
    log.write("two\n")
    assert calls == [1], "scheduled once per batch, when the buffer stops being empty"
    assert path.read_text() == "" and log.buffered == len("one\ntwo\n")
    log.flush()
    assert path.read_text() == "one\ntwo\n"
    log.write("three")
    assert calls == [1, 1]
    log.set_scheduler(None)  # flushes, then writes at once
    log.write("four")
    assert path.read_text() == "one\ntwo\nthree\nfour\n"
    assert log.lines == 4 and log.dropped == 0


def test_a_full_buffer_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    log = LogFile(str(path), buffer_bytes=10)
    log.set_scheduler(lambda: None)
    log.write("12345")
    assert path.read_text() == ""
    log.write("67890")
    assert path.read_text() == "12345\n67890\n"


def test_pipe_writes_are_whole_lines_of_at_most_pipe_buf(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        while data := os.read(read_end, 1 << 20):
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    log = LogFile(write_end, buffer_bytes=1 << 20)
    log.set_scheduler(lambda: None)
    lines = [f"line {i:05d} " + "x" * (i % 200) for i in range(2000)]
    for line in lines:
        log.write(line)
    log.flush()
    os.close(write_end)
    reader.join(10)
    os.close(read_end)
    data = b"".join(chunks)
    assert data.decode().splitlines() == lines
    # Each write(2) ended on a line end and was at most PIPE_BUF, so a reader with a
    # big buffer never saw a piece end mid-line.
    assert all(c.endswith(b"\n") for c in chunks)


def test_reopen_follows_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    log = open_log(str(path))
    log.set_scheduler(lambda: None)
    log.write("before")
    os.rename(path, tmp_path / "a.log.1")
    log.write("between")  # still buffered for the old file
    reopen_all()
    log.write("after")
    log.flush()
    assert (tmp_path / "a.log.1").read_text() == "before\nbetween\n"
    assert path.read_text() == "after\n"


def test_bad_destinations_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=r"cannot open log file .*missing"):
        LogFile(str(tmp_path / "missing" / "a.log"))
    with pytest.raises(ValueError, match="empty"):
        LogFile("")
    with pytest.raises(ValueError, match="buffer_bytes"):
        LogFile(str(tmp_path / "a.log"), buffer_bytes=0)
