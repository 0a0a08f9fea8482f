"""The `veter run` command line: every server setting has a flag, and the guide's
tables name only flags that exist."""

from __future__ import annotations

import os
import re
from dataclasses import fields
from pathlib import Path

import click
import pytest

from veter.cli import _server_config, run
from veter.config import ServerConfig

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def _flags() -> set[str]:
    options = [param for param in run.params if isinstance(param, click.Option)]
    return {opt for param in options for opt in [*param.opts, *param.secondary_opts]}


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


def test_negative_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--no-ws-deflate` is asked for, not an absent flag: it beats VETER_WS_DEFLATE."""
    from veter.cli import _flags as flags_of
    from veter.cli import _layered

    monkeypatch.setenv("VETER_WS_DEFLATE", "true")
    monkeypatch.setenv("VETER_PROXY_HEADERS", "false")
    context = run.make_context("run", ["app:app", "--no-ws-deflate", "--proxy-headers"])
    options = {k: v for k, v in context.params.items() if k not in ("app_ref", "single_process", "reload")}
    server, master = _layered(flags_of(options))
    assert server["ws_deflate"] is False
    assert server["proxy_headers"] is True
    assert master.reuse_port is False  # a plain flag left out stays at its default


def test_workers_auto_counts_the_cpus_this_process_may_use() -> None:
    from veter.supervisor import MasterConfig, usable_cpus

    assert usable_cpus() == len(os.sched_getaffinity(0))
    assert MasterConfig(workers="auto").worker_count == usable_cpus()
    assert MasterConfig(workers=3).worker_count == 3
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})  # as taskset or a container's cpuset would
        assert usable_cpus() == 1
        assert MasterConfig(workers="auto").worker_count == 1
    finally:
        os.sched_setaffinity(0, before)
