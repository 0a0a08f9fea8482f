"""Mappings handed to handlers: headers, query parameters, cookies, state.

They are built lazily by ``veter._core.Request`` the first time a handler asks, from
data the Rust parser already validated, so nothing here re-checks HTTP syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload
from urllib.parse import parse_qsl

__all__ = ["Headers", "QueryParams", "State", "parse_cookies"]

V = TypeVar("V")
D = TypeVar("D")


class _MultiMapping(Mapping[str, V], Generic[V]):
    """An immutable mapping that keeps every value of a repeated key, in order.

    ``m[key]`` and ``m.get(key)`` give the first value, ``m.getall(key)`` all of them;
    iteration yields each distinct key once, ``m.items()`` every (key, value) pair via
    ``multi_items()``.
    """

    __slots__ = ("_index", "_items")

    def __init__(self, items: Iterable[tuple[str, V]]) -> None:
        self._items: list[tuple[str, V]] = list(items)
        index: dict[str, list[V]] = {}
        for key, value in self._items:
            index.setdefault(self._fold(key), []).append(value)
        self._index = index

    @staticmethod
    def _fold(key: str) -> str:
        return key

    def __getitem__(self, key: str) -> V:
        return self._index[self._fold(key)][0]

    @overload
    def get(self, key: str) -> V | None: ...
    @overload
    def get(self, key: str, default: V | D) -> V | D: ...
    def get(self, key: str, default: object = None) -> object:
        """The first value of ``key``, or ``default`` (a dict lookup, not Mapping's
        generic ``get`` through ``__getitem__`` and an exception)."""
        values = self._index.get(self._fold(key))
        return default if values is None else values[0]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._fold(key) in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def getall(self, key: str) -> list[V]: ...
    @overload
    def getall(self, key: str, default: list[V]) -> list[V]: ...
    def getall(self, key: str, default: list[V] | None = None) -> list[V]:
        """Every value of ``key`` in arrival order; ``default`` (or []) when absent."""
        values = self._index.get(self._fold(key))
        if values is None:
            return [] if default is None else default
        return list(values)

    def multi_items(self) -> list[tuple[str, V]]:
        """Every (key, value) pair in arrival order, repeats included."""
        return list(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _MultiMapping):
            return type(self) is type(other) and sorted(self._norm()) == sorted(other._norm())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._norm())))

    def _norm(self) -> list[tuple[str, Any]]:
        return [(self._fold(k), v) for k, v in self._items]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"


class Headers(_MultiMapping[str]):
    """Request headers: case-insensitive keys, every value kept.

    Names keep the case the client sent in ``multi_items()``; lookups ignore case.
    Iteration yields lower-cased names.
    """

    __slots__ = ()

    @staticmethod
    def _fold(key: str) -> str:
        return key.lower()


class QueryParams(_MultiMapping[str]):
    """Query-string parameters, percent-decoded, blank values kept (``?a=&b`` has a and b)."""

    __slots__ = ()

    @classmethod
    def _from_parsed(cls, items: list[tuple[str, str]], index: dict[str, list[str]]) -> QueryParams:
        # The core parsed the query (pairs and index, as __init__ would make them).
        made = object.__new__(cls)
        made._items = items
        made._index = index
        return made

    @classmethod
    def from_string(cls, query: str) -> QueryParams:
        # (Requests' queries are parsed in the core: request.query.)
        return cls(parse_qsl(query, keep_blank_values=True))


def parse_cookies(header: str) -> dict[str, str]:
    """Parse a ``Cookie`` request header into a dict (the last of repeated names wins).

    Lenient on purpose, like browsers: pairs without ``=`` are skipped, surrounding
    spaces and a pair of double quotes around a value are removed. Values are not
    percent-decoded: RFC 6265 leaves their encoding to the application.
    """
    cookies: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        cookies[name] = value
    return cookies


class State:
    """A plain attribute namespace (``app.state.pg = pool``, ``request.state.user = u``)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"State({body})"
