"""Where a typed handler's parameters come from, and their constraints.

Used with ``typing.Annotated``::

    def search(request, q: Annotated[str, Query(min_length=2)],
               limit: Annotated[int, Query(ge=1, le=100)] = 10,
               token: Annotated[str | None, Header(alias="X-Token")] = None): ...

A parameter without a marker is a path parameter when the route's path names it,
the JSON body when its type is a model (a ``msgspec.Struct``, a dataclass, a
``TypedDict`` or a pydantic model), and a query parameter otherwise. Constraints
are checked by msgspec in compiled code (``msgspec.Meta``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Body", "Cookie", "Depends", "File", "Form", "Header", "Param", "Path", "Query"]


@dataclass(frozen=True)
class Param:
    """A parameter's source (the subclass) and its constraints."""

    #: The name in the request, when it differs from the Python name.
    alias: str | None = None
    description: str | None = None
    #: Numbers: greater than (or equal), less than (or equal), a multiple of.
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    multiple_of: float | None = None
    #: Strings, lists and maps: length bounds; strings: a regular expression.
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    examples: tuple[Any, ...] = field(default=())
    #: Marked deprecated in the API document.
    deprecated: bool = False

    #: Where the value is read from: "query", "header", "cookie", "path", "body",
    #: "form" or "file".
    location = "query"

    def constraints(self) -> dict[str, Any]:
        """The ``msgspec.Meta`` keywords this marker sets."""
        names = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern")
        found = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        if self.description is not None:
            found["description"] = self.description
        if self.examples:
            found["examples"] = list(self.examples)
        return found


@dataclass(frozen=True)
class Query(Param):
    """A query-string parameter; a ``list[...]`` type takes every repeated key."""

    location = "query"


@dataclass(frozen=True)
class Header(Param):
    """A request header. Without an alias the name is the parameter's with ``_`` as
    ``-`` (``x_token`` reads ``X-Token``); headers are matched case-insensitively."""

    location = "header"


@dataclass(frozen=True)
class Cookie(Param):
    """A cookie of the request's ``Cookie`` header."""

    location = "cookie"


@dataclass(frozen=True)
class Path(Param):
    """A path parameter (the route's path must name it); for its constraints."""

    location = "path"


@dataclass(frozen=True)
class Body(Param):
    """The JSON request body, decoded into the parameter's type."""

    location = "body"


@dataclass(frozen=True)
class Form(Param):
    """A text field of a form body (urlencoded or multipart), a ``list[...]`` type
    every value of a repeated name; on a model type (Struct, dataclass, TypedDict,
    pydantic model), the whole form's text fields read into the model."""

    location = "form"


@dataclass(frozen=True)
class File(Param):
    """A file of a multipart form body: typed ``veter.UploadFile``, a list of them
    (every file of the name), or ``bytes`` (the content read). An unmarked
    parameter typed ``UploadFile`` is a file too."""

    location = "file"


@dataclass(frozen=True)
class Depends:
    """A value made per request by ``dependency`` (``def`` or ``async def``, or a
    generator of either that yields the value and cleans up after the handler).

    ``Annotated[Conn, Depends(get_conn)]`` or ``conn: Conn = Depends(get_conn)``.
    The dependency's own parameters are read like a handler's (query, headers,
    the request, other dependencies). Called once per request however many
    parameters ask for it, unless ``use_cache=False``; replaced in tests through
    ``app.dependency_overrides[dependency] = fake``.
    """

    dependency: Callable[..., Any]
    use_cache: bool = True
