"""Values read from text: one rule per type, used wherever a typed handler reads
text (query, headers, cookies, path, form fields and form models), so the places
cannot answer differently.

msgspec's lax mode, which converts the rest, reads more than pydantic v2 and
FastAPI accept for numbers (``"1e2"`` as the int 100) and less for booleans
(``"yes"``). The rules here are pydantic's lax rules for text, without the
leniencies that hide a client's mistake (whitespace, ``_`` between digits, ``"1.0"``
as an int); docs/guide.md has the table and tests/typed/test_text.py checks it.
UUIDs, dates and times are read by msgspec's lax mode, the same on every path.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec

from veter.typed.kinds import list_item, strip_optional, unannotated

__all__ = [
    "Rules",
    "TextError",
    "apply",
    "bool_from_text",
    "decimal_from_text",
    "duration_from_text",
    "float_from_text",
    "int_from_text",
    "problems_of",
    "read",
    "rule_for",
    "split_rules",
    "text_rules",
]


class TextError(ValueError):
    """A text the type's rule does not read; ``kind`` is the 422's type."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


_INT = re.compile(r"[+-]?[0-9]+").fullmatch
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?").fullmatch
_NOT_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE).fullmatch
_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})


def int_from_text(text: str) -> int:
    """An optional sign and ASCII decimal digits (leading zeros allowed)."""
    if not (text.isdigit() and text.isascii()) and _INT(text) is None:
        raise TextError("Expected `int`: an optional sign and decimal digits", "int_parsing")
    try:
        return int(text)
    except ValueError:  # past the interpreter's 4300 digits, as in a JSON body
        raise TextError("Integer value out of range", "int_parsing_size") from None


def float_from_text(text: str) -> float:
    """A decimal number with an optional sign, fraction and exponent (``.5`` and
    ``5.`` too), or ``nan``, ``inf``, ``infinity`` in any case, signed or not. A
    finite number too large for a float is refused, as in a JSON body."""
    if _NUMBER(text) is not None:
        value = float(text)
        if math.isinf(value):
            raise TextError("Number out of range", "float_parsing")
        return value
    if _NOT_FINITE(text) is not None:
        return float(text)
    raise TextError("Expected `float`: a decimal number, nan or inf", "float_parsing")


def bool_from_text(text: str) -> bool:
    """``true``, ``1``, ``yes``, ``on``, ``t``, ``y`` or their opposites, in any case."""
    word = text.lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise TextError("Expected `bool`: true/false, 1/0, yes/no, on/off, t/f or y/n", "bool_parsing")


def decimal_from_text(text: str) -> decimal.Decimal:
    """A finite decimal number: sign, digits, fraction and exponent as for float."""
    if _NUMBER(text) is None:
        raise TextError("Expected `decimal`: a finite decimal number", "decimal_parsing")
    return decimal.Decimal(text)


def duration_from_text(text: str) -> datetime.timedelta:
    """An ISO 8601 duration (``P1DT2H``, ``-PT0.5S``), as in a JSON body; msgspec's
    lax mode would also read ``"3600"`` as seconds, which pydantic refuses."""
    try:
        return msgspec.convert(text, datetime.timedelta)
    except msgspec.ValidationError:
        raise TextError("Expected `duration`: ISO 8601, like P1DT2H30M", "time_delta_parsing") from None


_RULES: dict[Any, Callable[[str], Any]] = {
    int: int_from_text,
    float: float_from_text,
    bool: bool_from_text,
    decimal.Decimal: decimal_from_text,
    datetime.timedelta: duration_from_text,
}


class OrNull:
    """The rule of an optional type: the text ``null`` reads as None (what OpenAPI
    tools such as Schemathesis send for a null in a query or form, and what msgspec
    reads for the types it converts), any other text by the type's rule."""

    __slots__ = ("rule",)

    def __init__(self, rule: Callable[[str], Any]) -> None:
        self.rule = rule

    def __call__(self, text: str) -> Any:
        return None if text == "null" else self.rule(text)


_OR_NULL = {rule: OrNull(rule) for rule in _RULES.values()}


def rule_for(tp: Any) -> Callable[[str], Any] | None:
    """The rule reading ``tp`` (optional and constrained too) from text, or None
    for a type msgspec reads (str, UUID, dates, an Enum, a Literal, a union)."""
    plain = unannotated(tp)
    base = strip_optional(plain)
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return None
    rule = _RULES.get(base)
    if rule is not None and base is not plain:
        return _OR_NULL[rule]
    return rule


#: (parameter or field name, rule, takes a list of texts)
Rules = tuple[tuple[str, Callable[[str], Any], bool], ...]


def text_rules(fields: list[tuple[str, Any]]) -> Rules:
    """The rules of ``(name, type)`` fields whose type (or list item type) has one."""
    found = []
    for name, tp in fields:
        item = list_item(tp)
        rule = rule_for(item if item is not None else tp)
        if rule is not None:
            found.append((name, rule, item is not None))
    return tuple(found)


#: Rules whose every text msgspec's lax conversion reads to the same value or
#: refuses (tests/typed/test_text.py runs the table through both paths). Not the
#: bool's: msgspec reads a number's text as a bool (`-0` as False), which the rule
#: refuses.
_LAX_AGREES = (float_from_text,)


def split_rules(rules: Rules) -> tuple[bool, tuple[str, ...]]:
    """For a reader's good path: whether msgspec's lax conversion may read the
    texts first (every rule is an int's or a float's, none of a list),
    and the ints whose text must then be plain digits (msgspec refuses the rest of
    what the int rule reads, a sign or leading zeros, and reads what it refuses
    only with a non-digit in it: ``1e2``, ``5.0``)."""
    bases = [(name, rule.rule if isinstance(rule, OrNull) else rule, many) for name, rule, many in rules]
    agrees = all(not many and rule in (int_from_text, *_LAX_AGREES) for _, rule, many in bases)
    plain_ints = tuple(name for name, rule, many in bases if rule is int_from_text and not many)
    return agrees, plain_ints


def apply(rules: Rules, raw: dict[str, Any]) -> None:
    """Reads ``raw``'s texts by their rules, in place; TextError at the first one
    that does not read (the caller then lists every problem). A value that is not
    text (a path parameter its route's converter made an int) is left as it is."""
    for name, rule, many in rules:
        value = raw.get(name)
        if value.__class__ is str:
            raw[name] = rule(value)
        elif many and value.__class__ is list:
            raw[name] = [rule(v) for v in value]


def problems_of(rule: Callable[[str], Any], many: bool, value: Any) -> list[tuple[int | None, TextError]]:
    """Each text of ``value`` the rule does not read, with its index in a list."""
    if isinstance(value, str) and not many:
        try:
            rule(value)
        except TextError as error:
            return [(None, error)]
        return []
    if not (many and isinstance(value, list)):
        return []
    found: list[tuple[int | None, TextError]] = []
    for index, text in enumerate(value):
        try:
            rule(text)
        except TextError as error:
            found.append((index, error))
    return found


def read(rule: Callable[[str], Any] | None, many: bool, value: Any) -> Any:
    """``value`` read by ``rule`` (unchanged without one); for the 422's walk,
    after ``problems_of`` found none."""
    if rule is None:
        return value
    if many and isinstance(value, list):
        return [rule(v) for v in value]
    if isinstance(value, str):
        return rule(value)
    return value
