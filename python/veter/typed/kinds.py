"""What a parameter's type is, for deciding where it comes from and how it is
checked: models (the JSON body), scalars (query, header, cookie and path values),
and lists of scalars (repeated query keys)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import sys
import types
import typing
import uuid
from typing import Any

import msgspec

from veter.forms import UploadFile

__all__ = ["is_model", "is_pydantic_model", "is_scalar", "is_upload", "list_item", "strip_optional"]

_SCALARS: tuple[type, ...] = (
    str,
    int,
    float,
    bool,
    bytes,
    uuid.UUID,
    decimal.Decimal,
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
)
_LISTS = (list, set, frozenset, tuple)


def unannotated(tp: Any) -> Any:
    """``tp`` without ``Annotated[...]`` metadata."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def strip_optional(tp: Any) -> Any:
    """``T`` for ``T | None`` (and ``Optional[T]``); else ``tp``."""
    tp = unannotated(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return unannotated(args[0])
    return tp


def is_pydantic_model(tp: Any) -> bool:
    # pydantic is optional: a model of it exists only if it was imported.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def is_model(tp: Any) -> bool:
    """A type a JSON body decodes into: a Struct, dataclass, TypedDict or pydantic
    model, or a list or dict of them."""
    tp = strip_optional(tp)
    if isinstance(tp, type) and (
        issubclass(tp, msgspec.Struct) or dataclasses.is_dataclass(tp) or is_pydantic_model(tp)
    ):
        return True
    if typing.is_typeddict(tp):
        return True
    origin = typing.get_origin(tp)
    if origin in _LISTS or origin is dict:
        args = typing.get_args(tp)
        return bool(args) and is_model(args[-1])
    return False


def is_scalar(tp: Any) -> bool:
    """A value one string can hold: str, numbers, bool, UUID, dates, Decimal, an
    Enum, a Literal, or an optional/union of those."""
    tp = unannotated(tp)
    if tp is Any:
        return False
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(a is type(None) or is_scalar(a) for a in typing.get_args(tp))
    return isinstance(tp, type) and (issubclass(tp, _SCALARS) or issubclass(tp, enum.Enum))


def list_item(tp: Any) -> Any | None:
    """``T`` for ``list[T]``, ``set[T]``, ``tuple[T, ...]`` (optional or not) of a
    scalar ``T``; else None."""
    tp = strip_optional(tp)
    origin = typing.get_origin(tp)
    if origin not in _LISTS:
        return None
    args = [a for a in typing.get_args(tp) if a is not Ellipsis]
    if len(args) == 1 and is_scalar(args[0]):
        return args[0]
    return None


def is_upload(tp: Any) -> bool:
    """``UploadFile`` or ``list[UploadFile]`` (optional or not): a form's file."""
    tp = strip_optional(tp)
    if tp is UploadFile:
        return True
    return typing.get_origin(tp) is list and typing.get_args(tp) == (UploadFile,)
