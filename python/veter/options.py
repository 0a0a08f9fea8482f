"""Settings declared once: each field of ``ServerConfig`` and ``MasterConfig`` says
its help, bounds and flag here, and everything else is made from that.

``setting(default, help, ...)`` declares a dataclass field. From the declarations:

- ``check(instance)`` checks the bounds and choices (``__post_init__`` calls it);
- ``click_options(cls)`` makes the ``veter run`` options;
- ``reference(cls)`` writes the Markdown table of docs/settings.md (``veter.cli``
  makes the page; a test keeps the file equal to it);
- ``veter.settings`` reads environment variables (``VETER_<NAME>``) and config-file
  keys by field name and type, so they need no declaration of their own.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import click

__all__ = [
    "Option",
    "check",
    "click_options",
    "declared",
    "none_flags",
    "reference",
    "setting",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Option:
    """How one setting is offered and checked."""

    #: One sentence or two: what it does, its unit, what 0 or None means.
    help: str
    #: Lower bound (inclusive), upper bound (inclusive), lower bound (exclusive).
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    #: A flag that sets the setting to None, with its help: ("--no-server-header", "...").
    none_flag: tuple[str, str] | None = None
    #: How the default reads in --help and the docs, when its value does not say it well.
    shown_default: str | None = None
    #: Placeholder of the value in --help.
    metavar: str | None = None
    #: The values allowed, for a ``str`` setting that is not typed as a ``Literal``.
    choices: tuple[str, ...] | None = None
    #: The value's choices are matched without regard to case.
    case_insensitive: bool = False


def setting(default: Any, help: str, **how: Any) -> Any:
    """A dataclass field declared as a setting (see ``Option`` for ``how``)."""
    return field(default=default, metadata={"option": Option(help, **how)})


def declared(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Option, Any]]:
    """Each field of ``cls`` with its declaration and its resolved type."""
    return iter(_declarations(cls))


@functools.cache
def _declarations(cls: type) -> tuple[tuple[dataclasses.Field[Any], Option, Any], ...]:
    # Resolved once per class: every ServerConfig made (App(...), with_()) checks itself.
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        option = f.metadata.get("option")
        if option is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with setting()")
        out.append((f, option, hints[f.name]))
    return tuple(out)


def choices_of(kind: Any) -> tuple[str, ...] | None:
    """The values of a ``Literal`` (inside ``X | None`` too), else None."""
    for part in _parts(kind):
        if typing.get_origin(part) is Literal:
            return tuple(str(v) for v in typing.get_args(part))
    return None


def check(instance: Any) -> None:
    """Raises ValueError, naming the setting, for a value outside its bounds or choices."""
    for f, option, kind in declared(type(instance)):
        value = getattr(instance, f.name)
        if value is None or isinstance(value, bool):
            continue
        allowed = option.choices or choices_of(kind)
        if allowed is not None and isinstance(value, str):
            given = value.lower() if option.case_insensitive else value
            if given not in allowed:
                raise ValueError(f"{f.name} must be {_either(allowed)}, got {value!r}")
            continue
        if not isinstance(value, int | float):
            continue
        if option.ge is not None and option.le is not None:
            if not option.ge <= value <= option.le:
                raise ValueError(f"{f.name} must be {_num(option.ge)} to {_num(option.le)}, got {value}")
        elif option.ge is not None and not value >= option.ge:
            floor = "at least 1" if option.ge == 1 else f">= {_num(option.ge)}"
            raise ValueError(f"{f.name} must be {floor}, got {value}")
        elif option.gt is not None and not value > option.gt:
            raise ValueError(f"{f.name} must be a positive number of seconds, got {value}")


def click_options(cls: type) -> Callable[[F], F]:
    """Decorates a click command with an option for each setting of ``cls``.

    Every option defaults to None (absent), so that only what is given on the
    command line overrides the environment and the config file."""
    made: list[Callable[[F], F]] = []
    for f, option, kind in declared(cls):
        flag = "--" + f.name.replace("_", "-")
        shown = f" [default: {shown_default(f, option)}]"
        params: dict[str, Any] = {"default": None, "help": option.help + shown}
        base = value_type(kind)
        allowed = option.choices or choices_of(kind)
        if base is bool:
            made.append(click.option(f"{flag}/--no-{flag[2:]}", f.name, **params))
            continue
        if allowed is not None and base is str:
            params["type"] = click.Choice(list(allowed), case_sensitive=not option.case_insensitive)
        elif allowed is not None:
            params["type"] = _NumberOrWord(base, allowed)  # workers: 3 or "auto"
        elif base is int or base is float:
            params["type"] = base
        if typing.get_origin(kind) is tuple:
            params["multiple"] = True
        if option.metavar:
            params["metavar"] = option.metavar
        made.append(click.option(flag, f.name, **params))
        if option.none_flag:
            none_flag, none_help = option.none_flag
            made.append(
                click.option(none_flag, "none_" + f.name, is_flag=True, default=False, help=none_help)
            )

    def apply(command: F) -> F:
        for decorate in reversed(made):
            command = decorate(command)
        return command

    return apply


def none_flags(cls: type) -> dict[str, str]:
    """The parameter names of the flags that set a setting to None, by setting."""
    return {f.name: "none_" + f.name for f, option, _ in declared(cls) if option.none_flag}


def shown_default(f: dataclasses.Field[Any], option: Option) -> str:
    if option.shown_default is not None:
        return option.shown_default
    value = f.default
    if value is None:
        return "off"
    if value == ():
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def reference(cls: type, *, with_env: str = "VETER_") -> str:
    """The Markdown table of ``cls``'s settings: name, flag, variable, default, help."""
    rows = ["| setting | flag | environment | default | what it does |", "| --- | --- | --- | --- | --- |"]
    for f, option, kind in declared(cls):
        flag = "--" + f.name.replace("_", "-")
        flags = f"`{flag}`, `--no-{flag[2:]}`" if value_type(kind) is bool else f"`{flag}`"
        if option.none_flag:
            flags += f", `{option.none_flag[0]}`"
        text = option.help.replace("|", "\\|")
        rows.append(
            f"| `{f.name}` | {flags} | `{with_env}{f.name.upper()}` | {shown_default(f, option)} | {text} |"
        )
    return "\n".join(rows) + "\n"


class _NumberOrWord(click.ParamType):  # type: ignore[type-arg]  # generic only from click 8.2
    """A flag whose setting is a number or one of some words (``int | Literal[...]``)."""

    name = "number"

    def __init__(self, number: type, words: tuple[str, ...]) -> None:
        self.number = number
        self.words = words

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value in self.words or isinstance(value, self.number):
            return value
        try:
            return self.number(value)
        except (TypeError, ValueError):
            words = _either(tuple(repr(w) for w in self.words))
            self.fail(f"must be a number or {words}, not {value!r}", param, ctx)


def _parts(kind: Any) -> tuple[Any, ...]:
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        return typing.get_args(kind)
    return (kind,)


def value_type(kind: Any) -> Any:
    """``int`` for ``int | None``, ``str`` for ``tuple[str, ...]`` and Literals, ..."""
    for part in _parts(kind):
        if part is type(None):
            continue
        if typing.get_origin(part) is tuple:
            return typing.get_args(part)[0]
        if typing.get_origin(part) is Literal:
            continue
        return part
    return str


def _either(values: tuple[str, ...]) -> str:
    return ", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1 else values[0]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
