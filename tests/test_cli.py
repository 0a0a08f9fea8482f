"""The `veter run` command line: every server setting has a flag, and the guide's
tables name only flags that exist."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import click
import pytest

from veter.cli import _server_config, run
from veter.config import ServerConfig

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def _flags() -> set[str]:
    return {opt for param in run.params if isinstance(param, click.Option) for opt in param.opts}


def test_every_server_setting_has_a_flag() -> None:
    flags = _flags()
    missing = []
    for field in fields(ServerConfig):
        flag = "--" + field.name.replace("_", "-")
        if flag not in flags:
            missing.append(flag)
    assert missing == []


def test_the_guide_names_only_flags_that_exist() -> None:
    named = set(re.findall(r"`(--[a-z][a-z-]+)`", GUIDE.read_text()))
    assert named, "the guide lists no flags"
    assert named - _flags() == set()


def test_flag_values_reach_the_config() -> None:
    config = _server_config(ServerConfig(), {"queue_timeout": 0.005, "max_concurrency": 8})
    assert (config.queue_timeout, config.max_concurrency) == (0.005, 8)


def test_a_bad_value_is_a_clear_error() -> None:
    with pytest.raises(click.ClickException, match="queue_timeout"):
        _server_config(ServerConfig(), {"queue_timeout": -1.0})
