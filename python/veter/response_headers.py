"""``response.headers``: a case-insensitive, mutable view of an answer's header
fields, for ``veter.Response`` and ``veter.StreamingResponse`` alike.

The view holds no headers of its own: every read and write goes to the response's
header methods (``get_header``, ``set_header``, ``add_header``, ``remove_header``),
which check names and values as they always do, so a write through the view can
never be lost or split a response. It is made only when a handler asks for
``response.headers``; a response whose headers are never touched pays nothing.

Like the request's ``Headers``: ``headers[name]`` and ``get`` give the first value,
``getall`` every value, iteration yields each name once, lower-cased, and
``multi_items()`` every (name, value) pair as set. Setting a name replaces all its
fields; ``add`` keeps them (several ``Set-Cookie``). ``Content-Type`` is one of the
fields (the response's ``content_type``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Protocol, TypeVar, overload

from veter.datastructures import Headers

__all__ = ["HeaderFields", "ResponseHeaders"]

D = TypeVar("D")


class HeaderFields(Protocol):
    """What a response offers the view: its header methods and its fields."""

    def get_header(self, name: str, default: str | None = None) -> str | None: ...
    def set_header(self, name: str, value: str) -> None: ...
    def add_header(self, name: str, value: str) -> None: ...
    def remove_header(self, name: str) -> int: ...
    def _header_items(self) -> list[tuple[str, str]]:
        """Every field as (name, value), Content-Type first when there is one."""
        ...


class ResponseHeaders(MutableMapping[str, str]):
    """The header fields of one response, names compared without regard to case."""

    __slots__ = ("_fields",)

    def __init__(self, fields: HeaderFields) -> None:
        self._fields = fields

    def __getitem__(self, name: str) -> str:
        value = self._fields.get_header(name)
        if value is None:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value: str) -> None:
        self._fields.set_header(name, value)

    def __delitem__(self, name: str) -> None:
        if not self._fields.remove_header(name):
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._fields.get_header(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @overload
    def get(self, name: str) -> str | None: ...
    @overload
    def get(self, name: str, default: str) -> str: ...
    @overload
    def get(self, name: str, default: D) -> str | D: ...
    def get(self, name: str, default: object = None) -> object:
        """The first value of ``name``, or ``default``."""
        value = self._fields.get_header(name)
        return default if value is None else value

    def getall(self, name: str, default: list[str] | None = None) -> list[str]:
        """Every value of ``name`` in order; ``default`` (or []) when there is none."""
        folded = name.lower()
        values = [v for n, v in self._fields._header_items() if n.lower() == folded]
        return values if values or default is None else default

    def add(self, name: str, value: str) -> None:
        """Adds a field, keeping those of the same name (``Content-Type`` has one
        value: adding it replaces it)."""
        self._fields.add_header(name, value)

    def multi_items(self) -> list[tuple[str, str]]:
        """Every (name, value) field in order, repeats included, names as set."""
        return self._fields._header_items()

    def _names(self) -> dict[str, None]:
        return dict.fromkeys(n.lower() for n, _ in self._fields._header_items())

    def __eq__(self, other: object) -> bool:
        """Equal to another response's headers, a request's ``Headers`` or a plain
        mapping with the same fields: names without regard to case, and the values
        of a repeated name in the same order."""
        if isinstance(other, (ResponseHeaders, Headers)):
            pairs = other.multi_items()
        elif isinstance(other, Mapping):
            pairs = list(other.items())
        else:
            return NotImplemented
        return _folded(self.multi_items()) == _folded(pairs)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.multi_items()!r})"


def _folded(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # sorted() is stable: a repeated name's values keep their order.
    return sorted(((n.lower(), v) for n, v in pairs), key=lambda pair: pair[0])
