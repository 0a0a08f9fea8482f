"""Rotator: rename by size or age, keep `backups` files, never lose the current one."""

from __future__ import annotations

from pathlib import Path

import pytest

from veter.logs import Rotator


def test_rotation_by_size_shifts_backups(tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    rotator = Rotator([str(path)], max_bytes=10, backups=2)
    path.write_text("short\n")
    assert not rotator.check()
    for n in range(1, 4):
        path.write_text(f"generation {n}\n")
        assert rotator.check()
        assert not path.exists()
    assert (tmp_path / "access.log.1").read_text() == "generation 3\n"
    assert (tmp_path / "access.log.2").read_text() == "generation 2\n"
    assert not (tmp_path / "access.log.3").exists(), "only `backups` files are kept"
    assert rotator.rotations == 3


def test_rotation_by_age(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    rotator = Rotator([str(path)], interval=60)
    path.write_text("x\n")
    assert not rotator.due(str(path))
    since = rotator._since[str(path)]
    assert not rotator.due(str(path), now=since + 59)
    # Not `since + 60`: (t + 60) - t can come out a hair under 60 in floating point
    # (it did once in CI, for t = 971.265883703).
    assert rotator.due(str(path), now=since + 60.5)


def test_missing_or_empty_files_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    (tmp_path / "a.log.1").write_text("older\n")
    rotator = Rotator([str(path)], max_bytes=1, interval=0.000001)
    assert not rotator.check()
    path.write_text("")
    assert not rotator.rotate(str(path))
    assert (tmp_path / "a.log.1").read_text() == "older\n" and path.exists()


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        Rotator(["a"], max_bytes=-1)
    with pytest.raises(ValueError, match="at least 1"):
        Rotator(["a"], backups=0)
    assert not Rotator([], max_bytes=5).enabled
    assert not Rotator(["a"]).enabled
