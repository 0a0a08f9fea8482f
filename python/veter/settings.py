"""Settings from layered sources: flags > environment > config file > defaults.

Server options (every ``ServerConfig`` field and the master's options) and an
application's own typed settings (a dataclass) are read the same way:

- a config file: ``veter.toml`` in the working directory (server options at the top,
  the application's under ``[app]``), or else ``[tool.veter]`` (and
  ``[tool.veter.app]``) in ``pyproject.toml``; ``VETER_CONFIG`` names another file;
- the environment: ``VETER_<OPTION>`` for server options, ``<PREFIX><FIELD>`` for the
  application's (its prefix chosen by the application);
- command-line flags, for server options.

Every value is converted to its field's type and checked; a bad one is a
``SettingsError`` that names the key and the source it came from. Each loaded value
remembers its source, which ``veter config MODULE:APP`` prints.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "ConfigFile",
    "Loaded",
    "SettingsError",
    "load",
    "load_settings",
    "loaded_settings",
    "read_config_file",
    "sources_of",
]

T = TypeVar("T")

ENV_PREFIX = "VETER_"
APP_SECTION = "app"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingsError(ValueError):
    """A setting that is unknown or does not fit its type; the message names the key
    and where it came from."""


@dataclass(frozen=True)
class ConfigFile:
    """The settings tables of one config file (empty when there is none)."""

    label: str  # how errors and ``veter config`` name it
    server: Mapping[str, Any]
    app: Mapping[str, Any]

    @classmethod
    def none(cls) -> ConfigFile:
        return cls("", {}, {})


def read_config_file(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> ConfigFile:
    """``$VETER_CONFIG``, else ``veter.toml``, else ``[tool.veter]`` of ``pyproject.toml``."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    named = environ.get(ENV_PREFIX + "CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise SettingsError(f"env {ENV_PREFIX}CONFIG: no such file {named!r}")
        return _table(path, _parse(path), str(path))
    if (cwd / "veter.toml").is_file():
        return _table(cwd / "veter.toml", _parse(cwd / "veter.toml"), "veter.toml")
    if (cwd / "pyproject.toml").is_file():
        tool = _parse(cwd / "pyproject.toml").get("tool", {})
        section = tool.get("veter") if isinstance(tool, dict) else None
        if section is not None:
            if not isinstance(section, dict):
                raise SettingsError("pyproject.toml: [tool.veter] must be a table")
            return _table(cwd / "pyproject.toml", section, "pyproject.toml [tool.veter]")
    return ConfigFile.none()


def _parse(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None


def _table(path: Path, data: dict[str, Any], label: str) -> ConfigFile:
    app = data.get(APP_SECTION, {})
    if not isinstance(app, dict):
        raise SettingsError(f"{label}: [{APP_SECTION}] must be a table")
    server = {k: v for k, v in data.items() if k != APP_SECTION}
    return ConfigFile(label, server, app)


@dataclass(frozen=True)
class Loaded:
    """Values for some fields, and the source of each."""

    values: dict[str, Any]
    sources: dict[str, str]


def load(
    classes: tuple[type[Any], ...],
    *,
    file_values: Mapping[str, Any],
    file_label: str,
    env_prefix: str,
    environ: Mapping[str, str],
    flags: Mapping[str, Any] | None = None,
) -> Loaded:
    """The fields of ``classes`` (dataclasses) set by the file, the environment or
    flags, highest last; fields set nowhere are left out (their default applies)."""
    hints: dict[str, Any] = {}
    for cls in classes:
        resolved = typing.get_type_hints(cls)
        hints.update({f.name: resolved[f.name] for f in dataclasses.fields(cls)})
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, raw in file_values.items():
        if key not in hints:
            raise SettingsError(f"{file_label}: unknown setting {key!r}{_suggest(key, hints)}")
        values[key] = _convert(raw, hints[key], f"{file_label}: {key}", from_text=False)
        sources[key] = file_label
    for name, hint in hints.items():
        variable = env_prefix + name.upper()
        if variable in environ:
            values[name] = _convert(environ[variable], hint, f"env {variable}", from_text=True)
            sources[name] = f"env {variable}"
    for name, value in (flags or {}).items():
        if name not in hints:
            raise SettingsError(f"unknown option {name!r}")
        values[name] = value
        sources[name] = "flag --" + name.replace("_", "-")
    return Loaded(values, sources)


def _suggest(key: str, known: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _convert(raw: Any, hint: Any, where: str, *, from_text: bool) -> Any:
    """``raw`` as a value of type ``hint``; text (environment) is parsed first."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if from_text and raw.strip().lower() in ("", "none"):
            return None
        last: SettingsError | None = None
        for option in options:
            try:
                return _convert(raw, option, where, from_text=from_text)
            except SettingsError as exc:
                last = exc
        raise last or SettingsError(f"{where}: no type to convert {raw!r} to")
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        if raw not in allowed:
            raise SettingsError(f"{where}: expected one of {', '.join(map(repr, allowed))}, got {raw!r}")
        return raw
    if origin is tuple:
        (item_hint, *_rest) = typing.get_args(hint)
        if from_text:
            items: list[Any] = [part.strip() for part in raw.split(",") if part.strip()]
        elif isinstance(raw, list | tuple):
            items = list(raw)
        else:
            raise SettingsError(f"{where}: expected a list, got {raw!r}")
        return tuple(
            _convert(item, item_hint, f"{where}[{i}]", from_text=False) for i, item in enumerate(items)
        )
    if hint is bool:
        if isinstance(raw, bool):
            return raw
        if from_text and raw.strip().lower() in _TRUE:
            return True
        if from_text and raw.strip().lower() in _FALSE:
            return False
        raise SettingsError(f"{where}: expected true or false, got {raw!r}")
    if hint in (int, float):
        if from_text:
            try:
                return hint(raw.strip())
            except ValueError:
                raise SettingsError(f"{where}: expected {_kind(hint)}, got {raw!r}") from None
        if (
            isinstance(raw, bool)
            or not isinstance(raw, int | float)
            or (hint is int and isinstance(raw, float))
        ):
            raise SettingsError(f"{where}: expected {_kind(hint)}, got {raw!r}")
        return hint(raw)
    if hint is str:
        if not isinstance(raw, str):
            raise SettingsError(f"{where}: expected a string, got {raw!r}")
        return raw
    raise SettingsError(f"{where}: settings of type {hint!r} are not supported")


def _kind(hint: type) -> str:
    return "an integer" if hint is int else "a number"


_app_sources: dict[int, tuple[Any, dict[str, str]]] = {}


def load_settings(
    cls: type[T],
    *,
    env_prefix: str,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> T:
    """An instance of the dataclass ``cls`` from ``[app]`` of the config file and
    ``<env_prefix><FIELD>`` variables over its defaults::

        @dataclass(frozen=True)
        class Settings:
            database_url: str = "postgresql://127.0.0.1/orders"
            page_size: int = 50

        settings = load_settings(Settings, env_prefix="ORDERS_")
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    environ = os.environ if environ is None else environ
    file = read_config_file(cwd, environ)
    label = f"{file.label} [{APP_SECTION}]" if file.label else ""
    loaded = load((cls,), file_values=file.app, file_label=label, env_prefix=env_prefix, environ=environ)
    try:
        instance = cls(**loaded.values)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{cls.__name__}: {exc}") from None
    _app_sources[id(instance)] = (instance, loaded.sources)
    return instance


def sources_of(settings: object) -> dict[str, str]:
    """Where each field of settings made by ``load_settings`` came from."""
    entry = _app_sources.get(id(settings))
    if entry is None or entry[0] is not settings:
        return {}
    return dict(entry[1])


def loaded_settings() -> list[tuple[Any, dict[str, str]]]:
    """Every settings object made by ``load_settings`` in this process, with sources."""
    return [(instance, dict(sources)) for instance, sources in _app_sources.values()]
