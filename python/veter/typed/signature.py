"""A typed handler's signature, read once at startup into a plan: where each
parameter comes from, its type and default, and how the body and the answer are
decoded and encoded. A signature that cannot be served is an error naming the
handler and the parameter, before the app serves anything."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

import msgspec

from veter._core import Request
from veter.background import BackgroundTasks
from veter.forms import UploadFile
from veter.params import Body, Depends, File, Param, Path, Query
from veter.typed.kinds import (
    is_model,
    is_pydantic_model,
    is_scalar,
    is_upload,
    list_item,
    strip_optional,
    unannotated,
)

__all__ = ["Dependency", "Plan", "Source", "dependency_plan", "plan_for"]

REQUIRED: Any = inspect.Parameter.empty


@dataclasses.dataclass(frozen=True)
class Source:
    """One parameter: its Python name, where it is read, its type and default."""

    name: str
    location: str
    #: The name in the request (a header's as sent; a query key; a cookie name).
    key: str
    #: The type checked, with the marker's constraints as msgspec.Meta.
    type: Any
    default: Any
    #: A list-typed query or form parameter: every value of a repeated key.
    many: bool = False
    marker: Param | None = None
    #: A form parameter typed as a model: the whole form read into it.
    whole: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def field(self) -> tuple[str, Any, Any]:
        """This value as a field of a ``msgspec.defstruct`` model: a non-empty
        mutable default (``tags: list[str] = ["a"]``) is copied for each request."""
        if self.required:
            return (self.name, self.type, msgspec.NODEFAULT)
        if isinstance(self.default, (list, dict, set, bytearray)) and self.default:
            return (
                self.name,
                self.type,
                msgspec.field(default_factory=functools.partial(copy.deepcopy, self.default)),
            )
        return (self.name, self.type, self.default)


@dataclasses.dataclass(frozen=True)
class Dependency:
    """A parameter whose value a dependency makes (``Depends``)."""

    name: str
    call: Callable[..., Any]
    use_cache: bool
    plan: Plan


@dataclasses.dataclass(frozen=True)
class Plan:
    """How to call a typed handler (or a dependency)."""

    handler: Callable[..., Any]
    #: The parameter that receives the request, if any.
    request_name: str | None
    #: Path, query, header and cookie values, checked together.
    values: tuple[Source, ...]
    body: Source | None
    #: The declared return type when the answer is encoded from it (a model).
    returns: Any
    dependencies: tuple[Dependency, ...] = ()
    #: Form fields and files (``Form``/``File``), read from one form body.
    form: tuple[Source, ...] = ()
    #: The parameter that receives the request's ``BackgroundTasks``, if any.
    background: str | None = None

    @property
    def streams_files(self) -> bool:
        """Some plan of the tree takes a file: the body is read as it arrives."""
        return any(s.location == "file" for p in self.walk() for s in p.form)

    def walk(self) -> list[Plan]:
        """This plan and its dependencies' plans, depth first, each once."""
        seen: dict[int, Plan] = {}
        stack = [self]
        while stack:
            plan = stack.pop()
            if id(plan) not in seen:
                seen[id(plan)] = plan
                stack.extend(d.plan for d in reversed(plan.dependencies))
        return list(seen.values())


def plan_for(
    handler: Callable[..., Any], path_names: set[str], where: str, *, dependency: bool = False
) -> Plan | None:
    """The plan for ``handler`` on a route whose path names ``path_names``, or None
    for a plain handler (the request first, then path parameters by name or
    ``**params``, no model return type): those are called as they are, at no
    extra cost."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        if dependency:
            raise TypeError(f"{where}: cannot read the dependency's signature") from None
        return None  # a callable without a signature: called as veter always did
    parameters = list(signature.parameters.values())
    # A callable object's annotations are on its __call__.
    annotated = handler if inspect.isroutine(handler) else getattr(type(handler), "__call__", handler)  # noqa: B004
    try:
        hints = typing.get_type_hints(annotated, include_extras=True)
    except Exception as exc:  # noqa: BLE001 - any failure to resolve an annotation
        if not dependency and _plain(parameters, {}, path_names, by_name_only=True):
            return None
        raise TypeError(
            f"{where}: cannot resolve the handler's annotations ({exc}); the types a typed handler "
            "names must be importable from its module (not local to a function)"
        ) from None
    if not dependency and _plain(parameters, hints, path_names, by_name_only=False):
        return None
    request_name: str | None = None
    if dependency:
        for parameter in parameters:
            hint = hints.get(parameter.name)
            if hint is Request or (parameter.name == "request" and hint is None):
                request_name = parameter.name
        parameters = [p for p in parameters if p.name != request_name]
    elif parameters and _is_request(parameters[0], hints):
        request_name = parameters[0].name
        parameters = parameters[1:]
    returns = hints.get("return", REQUIRED)
    encoded_return = returns if returns is not REQUIRED and is_model(returns) else None
    values: list[Source] = []
    form: list[Source] = []
    background: str | None = None
    body: Source | None = None
    dependencies: list[Dependency] = []
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue  # nothing is passed to them
        if _left_alone(parameter):
            continue  # keeps its default (lambda request, body=body: body)
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"{where}: parameter {parameter.name!r} is positional-only; values are passed by name"
            )
        hint = hints.get(parameter.name, str)
        if hint is Request and request_name is None:
            request_name = parameter.name  # the request, wherever it is declared
            continue
        if hint is BackgroundTasks:
            background = parameter.name
            continue
        depends = _depends(parameter, hint)
        if depends is not None:
            dependencies.append(
                Dependency(
                    parameter.name,
                    depends.dependency,
                    depends.use_cache,
                    dependency_plan(
                        depends.dependency, path_names, f"{where}: dependency {parameter.name!r}"
                    ),
                )
            )
            continue
        source = _source(parameter, hint, path_names, where)
        if source.location == "body":
            if body is not None:
                raise TypeError(
                    f"{where}: parameters {body.name!r} and {source.name!r} both read the body; "
                    "declare one model holding both"
                )
            body = source
        elif source.location in ("form", "file"):
            form.append(source)
        else:
            values.append(source)
    plan = Plan(
        handler,
        request_name,
        tuple(values),
        body,
        encoded_return,
        tuple(dependencies),
        tuple(form),
        background,
    )
    _check_body_readers(plan, where)
    return plan


def _check_body_readers(plan: Plan, where: str) -> None:
    """One JSON body per tree, and not beside form parameters."""
    plans = plan.walk()
    bodies = [(p.handler, p.body) for p in plans if p.body is not None]
    if len(bodies) > 1:
        names = ", ".join(f"{getattr(h, '__qualname__', h)}({b.name})" for h, b in bodies if b is not None)
        raise TypeError(f"{where}: more than one parameter reads the body ({names}); declare one model")
    forms = [s.name for p in plans for s in p.form]
    if bodies and forms:
        body = bodies[0][1]
        assert body is not None
        raise TypeError(
            f"{where}: parameter {body.name!r} reads the body as JSON and {forms[0]!r} as a form; "
            "a request has one body"
        )


def dependency_plan(call: Callable[..., Any], path_names: set[str], where: str) -> Plan:
    """The plan of a dependency: always a plan (its request parameter is one
    annotated ``veter.Request`` or named ``request``)."""
    if not callable(call):
        raise TypeError(f"{where}: Depends() takes a callable, not {call!r}")
    plan = plan_for(call, path_names, where, dependency=True)
    assert plan is not None
    return plan


def _depends(parameter: inspect.Parameter, hint: Any) -> Depends | None:
    if isinstance(parameter.default, Depends):
        return parameter.default
    if typing.get_origin(hint) is typing.Annotated:
        for meta in typing.get_args(hint)[1:]:
            if isinstance(meta, Depends):
                return meta
    return None


def _plain(
    parameters: list[inspect.Parameter], hints: dict[str, Any], path_names: set[str], *, by_name_only: bool
) -> bool:
    """A handler veter calls as it is: ``(request, **path_params)``."""
    if not parameters or parameters[0].kind is inspect.Parameter.VAR_KEYWORD:
        return False
    first = parameters[0]
    if by_name_only:
        # The annotations could not be resolved: only an unannotated request (or one
        # whose annotation names Request) and unannotated path names are plain.
        raw = first.annotation
        if raw is not inspect.Parameter.empty and not (isinstance(raw, str) and raw.endswith("Request")):
            return False
        if any(
            p.annotation is not inspect.Parameter.empty for p in parameters[1:] if p.name not in path_names
        ):
            return False
    elif not _is_request(first, hints):
        return False
    if not by_name_only and "return" in hints and is_model(hints["return"]):
        return False
    for parameter in parameters[1:]:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if _left_alone(parameter):
            continue
        if parameter.name not in path_names or isinstance(parameter.default, Depends):
            return False
        if not by_name_only and (
            _marker(hints.get(parameter.name)) is not None or _depends(parameter, hints.get(parameter.name))
        ):
            return False
    return True


def _left_alone(parameter: inspect.Parameter) -> bool:
    """A parameter without an annotation but with a default is not read from the
    request: it keeps its default, as veter always did (the idiom that binds a
    value into a handler, ``lambda request, body=body: body``). Give it a type to
    make it a query parameter."""
    return (
        parameter.annotation is inspect.Parameter.empty
        and parameter.default is not inspect.Parameter.empty
        and not isinstance(parameter.default, Depends)
    )


def _is_request(parameter: inspect.Parameter, hints: dict[str, Any]) -> bool:
    """Whether the (first) parameter receives the request: annotated
    ``veter.Request`` (or ``Any``), or not annotated at all, as the first parameter
    of every plain veter handler is (``def index(request)``, ``lambda r: ...``)."""
    if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        return False
    hint = hints.get(parameter.name)
    return hint is None or hint is Request or hint is Any


def _marker(hint: Any) -> Param | None:
    if typing.get_origin(hint) is typing.Annotated:
        for meta in typing.get_args(hint)[1:]:
            if isinstance(meta, Param):
                return meta
            if isinstance(meta, type) and issubclass(meta, Param):
                return meta()
    return None


def _source(parameter: inspect.Parameter, hint: Any, path_names: set[str], where: str) -> Source:
    name = parameter.name
    marker = _marker(hint)
    base = unannotated(hint)
    default = parameter.default
    if marker is None:
        if name in path_names:
            marker = Path()
        elif is_upload(base):
            marker = File()
        elif is_model(base):
            marker = Body()
        else:
            marker = Query()
    location = marker.location
    if location == "path" and name not in path_names:
        raise TypeError(f"{where}: parameter {name!r} is marked Path() but the route's path does not name it")
    if name in path_names and location != "path":
        raise TypeError(
            f"{where}: parameter {name!r} is in the route's path and marked {type(marker).__name__}(); "
            "a parameter comes from one place"
        )
    checked = _with_constraints(base, marker, f"{where}: parameter {name!r}")
    if location == "body":
        if not (is_model(base) or marker.location == "body"):
            raise TypeError(f"{where}: parameter {name!r}: a body is a model type")
        _check_supported(checked, f"{where}: parameter {name!r}", allow_pydantic=True)
        return Source(name, "body", name, checked, default, marker=marker)
    if location == "file":
        return _file_source(name, marker, base, default, where)
    if location == "form" and is_model(base):
        _check_supported(checked, f"{where}: parameter {name!r}", allow_pydantic=True)
        return Source(name, "form", name, checked, default, marker=marker, whole=True)
    many = False
    if not is_scalar(base):
        item = list_item(base)
        if item is None or location not in ("query", "form"):
            kinds = "a scalar or a list of scalars" if location in ("query", "form") else "a scalar"
            raise TypeError(
                f"{where}: parameter {name!r} ({location}) has type {_name(base)}; it must be {kinds} "
                "(str, int, float, bool, UUID, date/time, Decimal, Enum, Literal), or a model for the body"
            )
        many = True
    _check_supported(checked, f"{where}: parameter {name!r}", allow_pydantic=False)
    key = marker.alias or (name.replace("_", "-") if location == "header" else name)
    if location == "header":
        key = key.lower()
    return Source(name, location, key, checked, default, many, marker)


def _file_source(name: str, marker: Param, base: Any, default: Any, where: str) -> Source:
    """A ``File`` parameter: ``UploadFile``, a list of them, or ``bytes``."""
    inner = strip_optional(base)
    item = typing.get_args(inner)[0] if typing.get_origin(inner) is list and typing.get_args(inner) else None
    if not (inner is UploadFile or inner is bytes or item is UploadFile):
        raise TypeError(
            f"{where}: parameter {name!r} is a file; its type must be veter.UploadFile, "
            f"list[veter.UploadFile] or bytes, not {_name(base)}"
        )
    return Source(name, "file", marker.alias or name, base, default, many=item is not None, marker=marker)


def _with_constraints(tp: Any, marker: Param, what: str) -> Any:
    constraints = marker.constraints()
    if not constraints:
        return tp
    try:
        meta = msgspec.Meta(**constraints)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: {exc}") from None
    inner = strip_optional(tp)
    if is_pydantic_model(inner):
        return tp
    if inner is not unannotated(tp):
        # Optional: the constraints are the value's (None stays allowed).
        return typing.Optional[typing.Annotated[inner, meta]]  # noqa: UP045 - a type built at run time
    return typing.Annotated[tp, meta]


def _check_supported(tp: Any, what: str, *, allow_pydantic: bool) -> None:
    if allow_pydantic and is_pydantic_model(strip_optional(tp)):
        return
    try:
        msgspec.inspect.type_info(tp)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: type {_name(tp)} cannot be validated: {exc}") from None


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)
