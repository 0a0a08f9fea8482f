"""Reading a typed handler's ``Form`` and ``File`` parameters from the request's
form body (``request.form()``): text fields checked together in one compiled
msgspec conversion, a model read from the whole form, files handed over as
``UploadFile`` (or their bytes). Every problem is listed in one 422, located
under ``body`` as for a JSON body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from veter.exceptions import RequestValidationError
from veter.forms import FormData, UploadFile
from veter.typed.explain import Problem, explain, fields_of, from_validation_error, problem, value_problems
from veter.typed.kinds import is_pydantic_model, list_item, strip_optional, unannotated
from veter.typed.signature import Plan, Source
from veter.typed.text import Rules, TextError, apply, problems_of, read, text_rules

__all__ = ["form_reader"]

FormReader = Callable[[Any], Awaitable[dict[str, Any]]]
_SEQUENCES = (
    msgspec.inspect.ListType,
    msgspec.inspect.SetType,
    msgspec.inspect.FrozenSetType,
    msgspec.inspect.VarTupleType,
)


def form_reader(plan: Plan) -> FormReader | None:
    """What reads ``plan``'s form parameters into keyword arguments (None: it has none)."""
    if not plan.form:
        return None
    fields = tuple(s for s in plan.form if s.location == "form" and not s.whole)
    rules = text_rules([(s.name, s.type) for s in fields])
    wholes = tuple((s, _list_keys(s.type), _model_rules(s.type)) for s in plan.form if s.whole)
    files = tuple(s for s in plan.form if s.location == "file")
    model = (
        msgspec.defstruct(
            "FormValues",
            [s.field() for s in fields],
            kw_only=True,
        )
        if fields
        else None
    )

    async def read(request: Any) -> dict[str, Any]:
        form: FormData = await request.form()
        kwargs: dict[str, Any] = {}
        problems: list[Problem] = []
        if model is not None:
            raw = {s.name: v for s in fields if (v := _text_value(form, s, problems)) is not msgspec.UNSET}
            texts = dict(raw)
            try:
                apply(rules, raw)
                checked = msgspec.convert(raw, model, strict=False)
                kwargs.update((s.name, getattr(checked, s.name)) for s in fields)
            except (msgspec.ValidationError, TextError):
                problems.extend(value_problems(fields, texts, under="body"))
        for source, lists, model_rules in wholes:
            value = _whole(form, source, lists, model_rules, problems)
            if value is not msgspec.UNSET:
                kwargs[source.name] = value
        for source in files:
            value = await _files(form, source, problems)
            if value is not msgspec.UNSET:
                kwargs[source.name] = value
        if problems:
            raise RequestValidationError(problems)
        return kwargs

    return read


def _text_value(form: FormData, source: Source, problems: list[Problem]) -> Any:
    values = form.getall(source.key)
    if any(isinstance(v, UploadFile) for v in values):
        problems.append(problem(["body", source.key], "Expected a text field, got a file", "form_file"))
        return msgspec.UNSET
    if source.many:
        return values if values else msgspec.UNSET
    if not values or (values[0] == "" and not source.required):
        return msgspec.UNSET  # an empty field of a form leaves the default
    return values[0]


def _list_keys(tp: Any) -> frozenset[str]:
    """The names of a form model's fields that take every value of a repeated key."""
    model = strip_optional(tp)
    if is_pydantic_model(model):
        return frozenset(
            info.alias or name for name, info in model.model_fields.items() if list_item(info.annotation)
        )
    info = msgspec.inspect.type_info(unannotated(model))
    keys = set()
    for field in getattr(info, "fields", ()):
        kind = field.type
        while isinstance(kind, msgspec.inspect.Metadata):
            kind = kind.type
        if isinstance(kind, _SEQUENCES):
            keys.add(field.encode_name)
    return frozenset(keys)


def _model_rules(tp: Any) -> Rules:
    """The text rules of a form model's fields, by the field's name in the form."""
    model = strip_optional(tp)
    if is_pydantic_model(model):
        return text_rules(
            [(info.alias or name, info.annotation) for name, info in model.model_fields.items()]
        )
    return text_rules([(key, field_type) for key, field_type, _ in fields_of(model) or ()])


def _read_texts(data: dict[str, Any], rules: Rules, problems: list[Problem]) -> set[str]:
    """Reads ``data``'s texts by their fields' rules, in place; the keys that do
    not read are left out of ``data``, their problems added, their keys returned."""
    bad: set[str] = set()
    for key, rule, many in rules:
        if key in data:
            found = problems_of(rule, many, data[key])
            for index, error in found:
                loc = ["body", key] if index is None else ["body", key, index]
                text = data[key] if index is None else data[key][index]
                problems.append(problem(loc, str(error), error.kind, text))
            if found:
                bad.add(key)
                del data[key]
            else:
                data[key] = read(rule, many, data[key])
    return bad


def _whole(
    form: FormData, source: Source, lists: frozenset[str], rules: Rules, problems: list[Problem]
) -> Any:
    data: dict[str, Any] = {}
    for key in form:
        texts = [v for v in form.getall(key) if isinstance(v, str)]
        if texts:
            data[key] = texts if key in lists else texts[0]
    if not data and not source.required:
        return source.default
    bad = _read_texts(data, rules, problems)
    if bad:
        # The rest is still checked; a field whose text did not read is not "missing".
        found: list[Problem] = []
        _validate_whole(data, source, found)
        problems.extend(
            p for p in found if not (p["type"] == "missing" and p["loc"][1:2] and p["loc"][1] in bad)
        )
        return msgspec.UNSET
    return _validate_whole(data, source, problems)


def _validate_whole(data: dict[str, Any], source: Source, problems: list[Problem]) -> Any:
    model = strip_optional(source.type)
    if is_pydantic_model(model):
        import pydantic

        try:
            return model.model_validate(data)
        except pydantic.ValidationError as error:
            problems.extend(
                problem(["body", *item["loc"]], item["msg"], item["type"], item.get("input"))
                for item in error.errors(include_url=False)
            )
            return msgspec.UNSET
    try:
        return msgspec.convert(data, source.type, strict=False)
    except msgspec.ValidationError as error:
        problems.extend(
            explain(data, source.type, ["body"], strict=False)
            or [from_validation_error(error, ["body"], msgspec.UNSET)]
        )
        return msgspec.UNSET


async def _files(form: FormData, source: Source, problems: list[Problem]) -> Any:
    values = form.getall(source.key)
    uploads = [v for v in values if isinstance(v, UploadFile) and (v.filename or v.size)]
    if any(isinstance(v, str) for v in values):
        problems.append(problem(["body", source.key], "Expected a file, got a text field", "form_text"))
        return msgspec.UNSET
    if not uploads:
        if source.required:
            problems.append(problem(["body", source.key], "Field required", "missing"))
            return msgspec.UNSET
        return source.default
    if source.many:
        return uploads
    if strip_optional(source.type) is bytes:
        return await uploads[0].read()
    return uploads[0]
