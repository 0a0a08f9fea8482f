"""Calling a typed handler: its values read and checked, its body decoded, its
answer encoded, as its plan says. Built once per route; per request the work is
a few lookups and one compiled msgspec conversion for all the values."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any, Literal, overload

import msgspec

from veter._core import QueryPick, json_refusal
from veter.background import BackgroundTasks, after_answer
from veter.concurrency import run_in_thread
from veter.exceptions import HTTPException, RequestValidationError
from veter.responses import Response
from veter.streaming import StreamingResponse
from veter.typed.depends import Solver, body_bytes, finish
from veter.typed.explain import Problem, explain, from_validation_error, problem, value_problems
from veter.typed.forms import form_reader
from veter.typed.kinds import is_pydantic_model, strip_optional
from veter.typed.signature import REQUIRED, Plan, Source
from veter.typed.text import TextError, apply, split_rules, text_rules

__all__ = ["adapter_for"]

_PASS_THROUGH = (Response, StreamingResponse, str, bytes)


def adapter_for(
    plan: Plan,
    *,
    is_async: bool,
    blocking: bool,
    overrides: MutableMapping[Callable[..., Any], Callable[..., Any]],
    path_names: set[str],
    where: str,
    max_json_depth: int,
    streams: bool = False,
) -> Callable[..., Any]:
    """What the core calls, ``(request, **path_params)``, for a typed handler
    (``streams``: the route reads its body as it arrives; ``max_json_depth``: the
    deepest JSON body it decodes)."""
    encode = _encoder(plan.returns) if plan.returns is not None else None
    handler = plan.handler

    def body_reader(plan: Plan) -> Callable[[Any, bytes], Any] | None:
        return _body_reader(plan.body, max_json_depth) if plan.body is not None else None

    if plan.dependencies:
        solver = Solver(plan, _values_reader, body_reader, overrides, path_names, where, streams=streams)

        async def call_with_dependencies(request: Any, **path: Any) -> Any:
            exits: list[Any] = []
            tasks = BackgroundTasks()
            try:
                kwargs = await solver.arguments(request, path, exits, tasks)
                if blocking:
                    result = await run_in_thread(handler, **kwargs)
                else:
                    result = handler(**kwargs)
                    if is_async:
                        result = await result
            except BaseException as error:
                await finish(exits, error)
                raise
            answer = encode(result) if encode is not None else result
            if exits or len(tasks):
                # Generator dependencies clean up once the answer is sent (as
                # FastAPI's default request scope does), then background calls run.

                async def after() -> None:
                    await finish(exits, None)
                    await tasks.run()

                after_answer(request, answer, after)
            return answer

        call_with_dependencies.__qualname__ = getattr(handler, "__qualname__", "handler")
        return call_with_dependencies
    read_values = _values_reader(plan)
    read_body = body_reader(plan)
    read_form = form_reader(plan)
    request_name = plan.request_name
    background = plan.background

    def arguments(request: Any, path: dict[str, Any], body: Any) -> dict[str, Any]:
        kwargs = read_values(request, path)
        if request_name is not None:
            kwargs[request_name] = request
        if background is not None:
            kwargs[background] = BackgroundTasks()
        if plan.body is not None and body is not REQUIRED:
            kwargs[plan.body.name] = body
        return kwargs

    if not is_async and not blocking and read_body is not None and read_form is None and not streams:
        # The body was read before the handler started: a plain def handler with a
        # JSON body stays a plain call (no coroutine, no task).

        def call_sync_body(request: Any, **path: Any) -> Any:
            kwargs = arguments(request, path, read_body(request, request.body().value))
            result = handler(**kwargs)
            answer = encode(result) if encode is not None else result
            if background is not None:
                kwargs[background].schedule(request, answer)
            return answer

        call_sync_body.__qualname__ = getattr(handler, "__qualname__", "handler")
        return call_sync_body

    if (
        not is_async
        and not blocking
        and read_body is None
        and read_form is None
        and request_name is None
        and background is None
        and encode is None
    ):
        # The leanest typed handler, values in and an answer out: one call, its
        # values passed by position when its signature takes them in their order.
        if _positional(plan):
            read_tuple = _values_reader(plan, as_tuple=True)

            def call_values(request: Any, **path: Any) -> Any:
                return handler(*read_tuple(request, path))

        else:

            def call_values(request: Any, **path: Any) -> Any:
                return handler(**read_values(request, path))

        call_values.__qualname__ = getattr(handler, "__qualname__", "handler")
        return call_values

    if not is_async and not blocking and read_body is None and read_form is None:

        def call_sync(request: Any, **path: Any) -> Any:
            kwargs = arguments(request, path, REQUIRED)
            result = handler(**kwargs)
            answer = encode(result) if encode is not None else result
            if background is not None:
                kwargs[background].schedule(request, answer)
            return answer

        call_sync.__qualname__ = getattr(handler, "__qualname__", "handler")
        return call_sync

    async def call(request: Any, **path: Any) -> Any:
        body = REQUIRED
        if read_body is not None:
            body = read_body(request, await body_bytes(request, streams))
        kwargs = arguments(request, path, body)
        if read_form is not None:
            kwargs.update(await read_form(request))
        if blocking:
            result = await run_in_thread(handler, **kwargs)
        else:
            result = handler(**kwargs)
            if is_async:
                result = await result
        answer = encode(result) if encode is not None else result
        if background is not None:
            kwargs[background].schedule(request, answer)
        return answer

    call.__qualname__ = getattr(handler, "__qualname__", "handler")
    return call


def _positional(plan: Plan) -> bool:
    """Whether the handler's first parameters are its values, in the values' order,
    each taking a positional argument (then ``handler(*values)`` is ``handler(**values)``)."""
    try:
        parameters = list(inspect.signature(plan.handler).parameters.values())
    except (TypeError, ValueError):
        return False
    names = [s.name for s in plan.values]
    leading = parameters[: len(names)]
    return [p.name for p in leading] == names and all(
        p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for p in leading
    )


@overload
def _values_reader(plan: Plan) -> Callable[[Any, dict[str, Any]], dict[str, Any]]: ...
@overload
def _values_reader(
    plan: Plan, *, as_tuple: Literal[True]
) -> Callable[[Any, dict[str, Any]], tuple[Any, ...]]: ...
def _values_reader(plan: Plan, *, as_tuple: bool = False) -> Callable[[Any, dict[str, Any]], Any]:
    """Reads and checks the plan's path, query, header and cookie values: a dict by
    parameter name, or (``as_tuple``) a tuple in the plan's order."""
    sources = plan.values
    if not sources:
        return (lambda request, path: ()) if as_tuple else (lambda request, path: {})
    model = msgspec.defstruct("Values", [s.field() for s in sources], kw_only=True)
    unpack = msgspec.structs.astuple if as_tuple else msgspec.structs.asdict
    # Texts are read by veter's rules (typed.text). Calling a rule per value would
    # cost more than the rest of a typed GET (~2,500 instructions each), so where
    # msgspec's lax conversion reads a text as the rule does (an int's plain
    # digits, any float or bool it takes) it reads it; a plan with a type where it
    # does not (Decimal, a duration, a list of ints) applies every rule, and a
    # conversion that fails is retried with every rule, then explained.
    rules = text_rules([(s.name, s.type) for s in sources])
    lax_agrees, plain_ints = split_rules(rules)

    def keys(location: str) -> list[tuple[str, str]]:
        return [(s.name, s.key) for s in sources if s.location == location]

    # Per location, (parameter, key) pairs; the query's values are picked by the
    # core (no mapping built), the headers' read from the mapping's index (names
    # folded at startup as it folds them).
    in_path, in_headers, in_cookies = keys("path"), keys("header"), keys("cookie")
    in_query = [(s.key, s.name, s.many) for s in sources if s.location == "query"]
    pick = QueryPick(in_query) if in_query else None

    def read(request: Any, path: dict[str, Any]) -> Any:
        raw: dict[str, Any] = {}
        for name, key in in_path:
            if key in path:
                raw[name] = path[key]
        if pick is not None:
            request.pick_query(pick, raw)
        if in_headers:
            index = request.headers._index
            for name, key in in_headers:
                values = index.get(key)
                if values is not None:
                    raw[name] = values[0]
        if in_cookies:
            cookies = request.cookies
            for name, key in in_cookies:
                if key in cookies:
                    raw[name] = cookies[key]
        if lax_agrees:
            for name in plain_ints:
                text = raw.get(name)
                if text is not None and text.__class__ is str and not text.isdecimal():
                    break  # a sign, "1e2": the rule reads it
            else:
                try:
                    return unpack(msgspec.convert(raw, model, strict=False))
                except msgspec.ValidationError:
                    pass
        texts = dict(raw)  # as sent, for the problems' inputs
        try:
            apply(rules, raw)
            return unpack(msgspec.convert(raw, model, strict=False))
        except (msgspec.ValidationError, TextError):
            raise RequestValidationError(value_problems(sources, texts)) from None

    return read


def _body_reader(source: Source, max_depth: int) -> Callable[[Any, bytes], Any]:
    tp = source.type
    optional = strip_optional(tp) is not tp or not source.required
    model = strip_optional(tp)
    if is_pydantic_model(model):
        return _pydantic_body_reader(source, model, optional, max_depth)
    # Lax, as pydantic's default is: 3.0 is an int, "3" too (JSON Schema's
    # integer admits 3.0, so a client built from the document may send it).
    decoder = msgspec.json.Decoder(tp, strict=False)

    def read(request: Any, body: bytes) -> Any:
        if not body:
            return _empty_body(source, optional)
        _check_content_type(request)
        # One pass in the core: nested deeper than max_depth, not UTF-8, or bytes
        # JSON has not (`NaN`) are a 400 before any decoder sees them.
        if (reason := json_refusal(body, max_depth)) is not None:
            raise _not_json(reason)
        try:
            return decoder.decode(body)
        except msgspec.ValidationError as error:
            raise RequestValidationError(_body_problems(body, tp, error)) from None
        except (msgspec.DecodeError, UnicodeDecodeError) as error:
            raise _not_json(str(error)) from None
        except RecursionError:
            # Not reached below the setting's bound (500); a deeper Python stack
            # than the handler's would be, and it is still the client's body.
            raise _not_json("nested too deeply to decode") from None

    return read


def _pydantic_body_reader(
    source: Source, model: Any, optional: bool, max_depth: int
) -> Callable[[Any, bytes], Any]:
    import pydantic

    def read(request: Any, body: bytes) -> Any:
        if not body:
            return _empty_body(source, optional)
        _check_content_type(request)
        # One pass in the core: nested deeper than max_depth, not UTF-8, or bytes
        # JSON has not (`NaN`) are a 400 before any decoder sees them.
        if (reason := json_refusal(body, max_depth)) is not None:
            raise _not_json(reason)
        try:
            return model.model_validate_json(body)
        except pydantic.ValidationError as error:
            problems = []
            _check_syntax(body)
            for item in error.errors(include_url=False):
                if item["type"] == "json_invalid":
                    # JSON by its syntax (checked above): a value pydantic-core cannot
                    # hold, such as an integer of more than 4300 digits.
                    reason = item["msg"].removeprefix("Invalid JSON: ")
                    problems.append(problem(["body"], reason, "json_value"))
                    continue
                problems.append(problem(["body", *item["loc"]], item["msg"], item["type"], item.get("input")))
            raise RequestValidationError(problems) from None

    return read


def _not_json(reason: str) -> HTTPException:
    return HTTPException(400, f"request body is not valid JSON: {reason}")


def _check_syntax(body: bytes) -> None:
    """400 for a body that is not JSON at all. A typed decoder stops at the first
    value that does not fit (a 422), before it sees, say, trailing text; this is
    the 422 path's check that the body was JSON (msgspec.Raw: syntax only, no
    values made, numbers not range-checked)."""
    try:
        msgspec.json.decode(body, type=msgspec.Raw)
    except msgspec.DecodeError as error:
        raise _not_json(str(error)) from None


def _empty_body(source: Source, optional: bool) -> Any:
    if optional:
        return None if source.required else source.default
    raise RequestValidationError([problem(["body"], "Field required", "missing")])


def _check_content_type(request: Any) -> None:
    # One header looked up in the core: the headers mapping is not built for it.
    content_type = request.header("content-type")
    if content_type is None:
        return  # taken as JSON, as curl -d and most clients mean it
    media = content_type.partition(";")[0].strip().lower()
    if media == "application/json":
        return
    if not (media.startswith("application/") and media.endswith("+json")):
        raise HTTPException(415, f"the body must be application/json, not {media or 'empty'!r}")


def _body_problems(body: bytes, tp: Any, error: msgspec.ValidationError) -> list[Problem]:
    _check_syntax(body)
    first = [from_validation_error(error, ["body"], msgspec.UNSET)]
    try:
        value = msgspec.json.decode(body)
        return explain(value, tp, ["body"], strict=False) or first
    except UnicodeDecodeError:
        # The typed decoder met a type error before the bad bytes.
        raise HTTPException(400, "request body is not valid JSON: it is not UTF-8") from None
    except (msgspec.DecodeError, RecursionError):
        # Valid for the typed decoder up to its first error, but not as plain
        # Python values (a number out of range, nesting deeper than Python's
        # recursion): the first problem is the answer.
        return first


def _encoder(returns: Any) -> Callable[[Any], Any]:
    model = strip_optional(returns)
    if is_pydantic_model(model):

        def encode_pydantic(result: Any) -> Any:
            if isinstance(result, _PASS_THROUGH):
                return result
            return Response(result.model_dump_json(), content_type="application/json")

        return encode_pydantic
    # Structs and dataclasses are encoded by their fields, TypedDicts as the dicts
    # they are.
    encoder = msgspec.json.Encoder()
    complete = _has_dataclass(returns)

    def encode(result: Any) -> Any:
        if isinstance(result, _PASS_THROUGH):
            return result
        if complete:
            _fill_defaults(result)
        return Response(encoder.encode(result), content_type="application/json")

    return encode


def _has_dataclass(tp: Any) -> bool:
    """Whether values of ``tp`` can hold a dataclass (see ``_fill_defaults``)."""
    seen: set[int] = set()
    stack = [msgspec.inspect.type_info(tp)]
    while stack:
        info = stack.pop()
        if id(info) in seen:
            continue
        seen.add(id(info))
        if isinstance(info, msgspec.inspect.DataclassType):
            return True
        for name in ("type", "item_type", "key_type", "value_type"):
            if isinstance(getattr(info, name, None), msgspec.inspect.Type):
                stack.append(getattr(info, name))
        stack.extend(getattr(info, "types", ()) or ())
        stack.extend(f.type for f in getattr(info, "fields", ()) or ())
    return False


def _fill_defaults(value: Any) -> None:
    """Sets the defaults msgspec left out of a decoded dataclass's ``__dict__``.

    msgspec does not store a field's immutable default on a (non-slots) dataclass
    it decodes, the class attribute answering for it, but encodes a dataclass
    from its ``__dict__``: echoed, such a field would be missing from the answer.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        attrs = getattr(value, "__dict__", None)
        for field in dataclasses.fields(value):
            if attrs is not None and field.name not in attrs and hasattr(value, field.name):
                attrs[field.name] = getattr(value, field.name)
            _fill_defaults(getattr(value, field.name, None))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _fill_defaults(item)
    elif isinstance(value, dict):
        for item in value.values():
            _fill_defaults(item)
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            _fill_defaults(getattr(value, name, None))
