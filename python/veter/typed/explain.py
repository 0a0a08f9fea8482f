"""Every problem of a value that failed validation, for the 422 answer.

msgspec validates in compiled code and stops at the first problem; that is the
fast path for good requests. Only when it fails is the value walked here, field
by field, to list every problem with its location (the error path's cost does
not matter, the good path's does).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import orjson

from veter.typed.kinds import list_item, strip_optional, unannotated
from veter.typed.text import problems_of, read, rule_for

__all__ = ["Problem", "explain", "fields_of", "from_validation_error", "problem", "value_problems"]

Problem = dict[str, Any]
#: msgspec ends a message with the failing place: "... - at `$.items[0].qty`".
_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
#: ``[...]`` is a mapping's key msgspec does not name: the place stops at the mapping.
_STEP = re.compile(
    r"\.(?P<key>[^.\[]+)|\[(?P<index>\d+)\]|\[(?P<quoted>'[^']*'|\"[^\"]*\")\]|(?P<unnamed>\[\.\.\.\])"
)
#: Offending values longer than this are cut in the answer.
MAX_INPUT = 200


def problem(loc: list[Any], msg: str, kind: str, value: Any = msgspec.UNSET, *, show: bool = True) -> Problem:
    out: Problem = {"type": kind, "loc": loc, "msg": msg}
    if show and value is not msgspec.UNSET:
        out["input"] = _shown(value)
    return out


def _shown(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_INPUT:
        return value[:MAX_INPUT] + "..."
    if isinstance(value, (bytes, bytearray)):
        return _shown(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)  # past what JSON encoders take
    if isinstance(value, (dict, list)):
        text = repr(value)
        if len(text) > MAX_INPUT:
            return text[:MAX_INPUT] + "..."
        try:
            orjson.dumps(value)
        except TypeError:
            return text  # holds something the answer cannot encode (a huge integer)
        return value
    return value


def from_validation_error(
    error: msgspec.ValidationError, loc: list[Any], value: Any, *, show: bool = True
) -> Problem:
    """One problem from msgspec's message, its place appended to ``loc``."""
    message = str(error)
    match = _AT.search(message)
    if match is not None:
        message = message[: match.start()]
        for step in _STEP.finditer(match.group("path")):
            if step.group("unnamed") is not None:
                break
            if step.group("key") is not None:
                loc = [*loc, step.group("key")]
            elif step.group("index") is not None:
                loc = [*loc, int(step.group("index"))]
            else:
                loc = [*loc, step.group("quoted")[1:-1]]
    kind = "missing" if message.startswith("Object missing required field") else "invalid"
    return problem(loc, message, kind, value if match is None else msgspec.UNSET, show=show)


#: Headers and cookies may carry secrets: their values are not echoed in a 422.
_HIDDEN = frozenset({"header", "cookie"})


def value_problems(
    sources: Sequence[Any], raw: Mapping[str, Any], *, under: str | None = None
) -> list[Problem]:
    """Every problem of the values ``raw`` read for ``sources`` (typed handler
    parameters, each checked alone), located at ``[location, key]``, or at
    ``[under, key]`` (form fields are located under ``body``)."""
    found: list[Problem] = []
    for source in sources:
        loc: list[Any] = [under or source.location, source.key]
        if source.name not in raw:
            if source.required:
                found.append(problem(loc, "Field required", "missing"))
            continue
        value = raw[source.name]
        show = source.location not in _HIDDEN
        item = list_item(source.type)
        rule = rule_for(item if item is not None else source.type)
        if rule is not None:
            bad = problems_of(rule, item is not None, value)
            for index, error in bad:
                at, text = (loc, value) if index is None else ([*loc, index], value[index])
                found.append(problem(at, str(error), error.kind, text, show=show))
            if bad:
                continue
        try:
            msgspec.convert(read(rule, item is not None, value), source.type, strict=False)
        except msgspec.ValidationError as error:
            found.append(from_validation_error(error, loc, value, show=show))
    return found


def explain(value: Any, tp: Any, loc: list[Any], *, strict: bool = True) -> list[Problem]:
    """Every problem of ``value`` against ``tp`` (an empty list if it is valid)."""
    base = strip_optional(tp)
    if value is None and base is not unannotated(tp):
        return []  # an optional value left out
    fields = fields_of(base)
    if fields is not None:
        if not isinstance(value, Mapping):
            return [problem(loc, f"Expected `object`, got `{_json_type(value)}`", "invalid", value)]
        found: list[Problem] = []
        for key, field_type, required in fields:
            if key not in value:
                if required:
                    found.append(problem([*loc, key], "Field required", "missing"))
                continue
            found.extend(explain(value[key], field_type, [*loc, key], strict=strict))
        return found
    origin = typing.get_origin(base)
    args = typing.get_args(base)
    if origin in (list, set, frozenset) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        if not isinstance(value, list):
            return [problem(loc, f"Expected `array`, got `{_json_type(value)}`", "invalid", value)]
        item = args[0] if args else Any
        found = []
        for index, element in enumerate(value):
            found.extend(explain(element, item, [*loc, index], strict=strict))
        return found or _leaf(value, tp, loc, strict)
    if origin is dict and len(args) == 2 and isinstance(value, Mapping):
        found = []
        for key, element in value.items():
            found.extend(explain(element, args[1], [*loc, key], strict=strict))
        return found or _leaf(value, tp, loc, strict)
    return _leaf(value, tp, loc, strict)


def _leaf(value: Any, tp: Any, loc: list[Any], strict: bool) -> list[Problem]:
    try:
        msgspec.convert(value, tp, strict=strict)
    except msgspec.ValidationError as error:
        return [from_validation_error(error, loc, value)]
    return []


def fields_of(tp: Any) -> list[tuple[str, Any, bool]] | None:
    """(key in the JSON object, type, required) of a model's fields, or None."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return [(f.encode_name, f.type, f.required) for f in msgspec.structs.fields(tp)]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return [
            (
                f.name,
                hints[f.name],
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(tp)
            if f.init
        ]
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = getattr(tp, "__required_keys__", frozenset(hints))
        return [(name, hint, name in required) for name, hint in hints.items()]
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
