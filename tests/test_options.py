"""Settings declared once (veter.options): the bounds, the flags, the environment
variables and docs/settings.md all come from the one declaration of each setting."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

from veter.cli import _flags, run, settings_page
from veter.config import ServerConfig
from veter.options import Option, check, declared, setting, value_type
from veter.settings import load
from veter.supervisor import MasterConfig

DOCS = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
CLASSES = (ServerConfig, MasterConfig)


def test_the_settings_page_is_made_from_the_declarations() -> None:
    assert DOCS.read_text() == settings_page(), "docs/settings.md is out of date: run `make docs-settings`"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_bound_is_enforced_and_reachable(cls: type) -> None:
    """For each declared bound: the bound itself is accepted, one step past it is
    refused with a message naming the setting."""
    checked = 0
    for f, option, annotation in declared(cls):
        kind = value_type(annotation)
        step = 1 if kind is int else 0.001
        edges: list[tuple[float, float]] = []
        if option.ge is not None:
            edges.append((option.ge, option.ge - step))
        if option.le is not None:
            edges.append((option.le, option.le + step))
        if option.gt is not None:
            edges.append((option.gt + step, option.gt))
        for good, bad in edges:
            cls(**{f.name: kind(good)})
            with pytest.raises(ValueError, match=f"^{f.name} must be"):
                cls(**{f.name: kind(bad)})
            checked += 1
    assert checked >= 5


def test_choices_are_enforced() -> None:
    with pytest.raises(ValueError, match=r"^loop must be auto, uvloop or asyncio, got 'trio'"):
        ServerConfig(loop="trio")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^log_level must be debug, info, warning, error or critical"):
        ServerConfig(log_level="loud")
    assert ServerConfig(log_level="WARNING").log_level == "WARNING"  # any case
    assert MasterConfig(workers="auto").workers == "auto"
    with pytest.raises(ValueError, match="workers must be a number or 'auto'"):
        MasterConfig(workers="many")  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_setting_has_its_flag_typed_from_the_declaration(cls: type) -> None:
    params = {p.name: p for p in run.params if isinstance(p, click.Option)}
    for f, option, _ in declared(cls):
        param = params[f.name]
        flag = "--" + f.name.replace("_", "-")
        assert flag in param.opts
        assert param.default is None, f"{flag}: an absent flag must not override other sources"
        assert option.help in (param.help or "")
        if isinstance(f.default, bool):
            assert f"--no-{flag[2:]}" in param.secondary_opts
        elif isinstance(f.default, float):
            assert param.type is click.FLOAT
        elif isinstance(f.default, int) and f.name != "workers":
            assert param.type is click.INT


def test_a_flag_given_beats_the_environment_and_none_flags_clear() -> None:
    context = run.make_context(
        "run", ["app:app", "--port", "9001", "--no-server-header", "--no-request-id", "--workers", "auto"]
    )
    params = {k: v for k, v in context.params.items() if k not in ("app_ref", "single_process", "reload")}
    flags = _flags(params)
    assert flags == {"port": 9001, "server_header": None, "request_id_header": None, "workers": "auto"}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_setting_reads_its_environment_variable(cls: type) -> None:
    """VETER_<NAME> reaches every setting (here each set to its own default, as text)."""
    environ = {}
    for f, _, _ in declared(cls):
        value = f.default
        if value is None or value == ():
            continue
        environ[f"VETER_{f.name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    loaded = load(CLASSES, file_values={}, file_label="", env_prefix="VETER_", environ=environ, flags={})
    for name, source in loaded.sources.items():
        assert source == f"env VETER_{name.upper()}"
    assert set(loaded.sources) == {n[len("VETER_") :].lower() for n in environ}
    cls(**{k: v for k, v in loaded.values.items() if k in {f.name for f in dataclasses.fields(cls)}})


def test_a_field_without_a_declaration_is_refused() -> None:
    @dataclass(frozen=True)
    class Partly:
        declared_one: int = setting(1, "Declared.", ge=0)
        plain: int = 2

    with pytest.raises(TypeError, match=r"Partly\.plain is not declared with setting"):
        list(declared(Partly))


def test_check_reads_only_declarations() -> None:
    @dataclass(frozen=True)
    class Bounded:
        level: int = setting(1, "A level.", ge=1, le=9)
        ratio: float = setting(0.5, "A ratio.", gt=0)

        def __post_init__(self) -> None:
            check(self)

    assert Bounded(level=9).level == 9
    with pytest.raises(ValueError, match="level must be 1 to 9, got 10"):
        Bounded(level=10)
    with pytest.raises(ValueError, match="ratio must be a positive number of seconds, got 0"):
        Bounded(ratio=0)
    option: Any = dataclasses.fields(Bounded)[0].metadata["option"]
    assert isinstance(option, Option) and option.help == "A level."
