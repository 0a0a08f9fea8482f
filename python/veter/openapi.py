"""The OpenAPI 3.1 document of an app, made from the same declarations that check
its requests: routes, typed parameters and bodies (and their dependencies'),
declared return types, tags, docstrings, security schemes.

``veter.App(openapi=veter.OpenAPI(title="Orders", version="1.2.0"))`` serves it at
``/openapi.json``, with no extra package; the docs page at ``/docs`` needs
swagger-ui-py (veter.docs_page). Schemas come from msgspec (``msgspec.json.schema_components``)
and, for pydantic models, from pydantic, under ``components/schemas``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from veter.routing import PATH_PARAM, Route
from veter.typed import plan_of
from veter.typed.kinds import is_pydantic_model, strip_optional
from veter.typed.signature import Plan, Source

__all__ = ["DEFAULT_DOCS_PATH", "OpenAPI", "document"]

_REF = "#/components/schemas/{name}"
_VALIDATION_ERROR = {
    "title": "ValidationError",
    "type": "object",
    "properties": {
        "detail": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "msg": {"type": "string"},
                    "input": {},
                },
                "required": ["type", "loc", "msg"],
            },
        }
    },
    "required": ["detail"],
}


class _DefaultDocsPath(str):
    """The docs page's path when the app did not choose one: told apart from an
    explicit ``"/docs"`` by its type, so only an app that asked for the page fails
    to start without swagger-ui-py."""

    __slots__ = ()


#: ``OpenAPI.docs_path`` unless the app sets it.
DEFAULT_DOCS_PATH: str = _DefaultDocsPath("/docs")


@dataclass(frozen=True)
class OpenAPI:
    """What the document says about the service, and where it is served.

    ``security_schemes``: OpenAPI security scheme objects by name (e.g.
    ``{"bearer": {"type": "http", "scheme": "bearer"}}``); ``security``: the
    requirements that apply to every operation (``[{"bearer": []}]``).
    """

    title: str = "API"
    version: str = "0.1.0"
    description: str | None = None
    path: str = "/openapi.json"
    #: The interactive docs page (Swagger UI, from swagger-ui-py); None: no page.
    #: Left as is, the page is served when swagger-ui-py is installed (else one log
    #: record says how to get it); set, it is required (startup fails without it).
    docs_path: str | None = DEFAULT_DOCS_PATH
    servers: Sequence[Mapping[str, Any]] = ()
    security_schemes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    security: Sequence[Mapping[str, Sequence[str]]] = ()

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"OpenAPI path must start with '/': {self.path!r}")
        if self.docs_path is not None and (
            not self.docs_path.startswith("/") or self.docs_path.endswith("/")
        ):
            raise ValueError(
                f"OpenAPI docs_path must start with '/' and not end with one: {self.docs_path!r}"
            )

    @property
    def docs_page_required(self) -> bool:
        """Whether the app chose ``docs_path`` itself: then a missing swagger-ui-py
        stops it at startup instead of leaving the page out."""
        return self.docs_path is not None and not isinstance(self.docs_path, _DefaultDocsPath)


#: What a route reading a body may answer besides 422, from the core or the reader.
_BODY_ERRORS = {
    "400": "Malformed body (not JSON, not UTF-8, a broken form)",
    "413": "Body too large (max_body_bytes, the form limits)",
    "415": "Unsupported Content-Type",
}


def document(config: OpenAPI, routes: Sequence[Route]) -> dict[str, Any]:
    """The OpenAPI 3.1 document for ``routes``."""
    builder = _Builder()
    paths: dict[str, dict[str, Any]] = {}
    used_ids: set[str] = set()
    for route in routes:
        if route.websocket or not route.include_in_schema:
            continue
        plan = plan_of(route)
        item = paths.setdefault(PATH_PARAM.sub(r"{\1}", route.path), {})
        for method in route.methods:
            if method == "HEAD" and "GET" in route.methods:
                continue
            item[method.lower()] = builder.operation(route, method, plan, used_ids)
    info: dict[str, Any] = {"title": config.title, "version": config.version}
    if config.description:
        info["description"] = config.description
    out: dict[str, Any] = {"openapi": "3.1.0", "info": info, "paths": paths}
    if config.servers:
        out["servers"] = [dict(s) for s in config.servers]
    components: dict[str, Any] = {}
    schemas = builder.components()
    if schemas:
        components["schemas"] = schemas
    if config.security_schemes:
        components["securitySchemes"] = {k: dict(v) for k, v in config.security_schemes.items()}
    if components:
        out["components"] = components
    if config.security:
        out["security"] = [{k: list(v) for k, v in r.items()} for r in config.security]
    return out


class _Builder:
    """Collects the schemas operations refer to."""

    def __init__(self) -> None:
        self._schemas: dict[str, Any] = {}
        self._validation_error = False

    def schema(self, tp: Any) -> dict[str, Any]:
        model = strip_optional(tp)
        if is_pydantic_model(model):
            schema = model.model_json_schema(ref_template=_REF.replace("{name}", "{model}"))
            self._schemas.update(schema.pop("$defs", {}))
            self._schemas[model.__name__] = schema
            ref = {"$ref": _REF.format(name=model.__name__)}
            return ref if model is tp else {"anyOf": [ref, {"type": "null"}]}
        (found,), components = msgspec.json.schema_components([tp], ref_template=_REF)
        self._schemas.update(components)
        return dict(found)

    def components(self) -> dict[str, Any]:
        if self._validation_error:
            self._schemas.setdefault("ValidationError", _VALIDATION_ERROR)
        return dict(sorted(self._schemas.items()))

    def operation(self, route: Route, method: str, plan: Plan | None, used_ids: set[str]) -> dict[str, Any]:
        handler = route.handler
        name: str = route.name or getattr(handler, "__name__", None) or "handler"
        operation_id = f"{name}_{method.lower()}"
        n = 2
        while operation_id in used_ids:
            operation_id, n = f"{name}_{method.lower()}_{n}", n + 1
        used_ids.add(operation_id)
        op: dict[str, Any] = {"operationId": operation_id}
        doc = inspect.getdoc(handler)
        if doc:
            summary, _, rest = doc.partition("\n\n")
            op["summary"] = " ".join(summary.split())
            if rest.strip():
                op["description"] = rest.strip()
        else:
            op["summary"] = name.replace("_", " ").strip().capitalize()
        if route.tags:
            op["tags"] = list(route.tags)
        parameters = self.parameters(route, plan)
        if parameters:
            op["parameters"] = parameters
        body = next((p.body for p in plan.walk() if p.body is not None), None) if plan is not None else None
        if body is not None:
            op["requestBody"] = {
                "required": body.required and strip_optional(body.type) is body.type,
                "content": {"application/json": {"schema": self.schema(body.type)}},
            }
        form = [s for p in plan.walk() for s in p.form] if plan is not None else []
        if form:
            op["requestBody"] = self.form_body(form)
        # Only a typed handler's requests are validated (a plain one's never get 422).
        validated = plan is not None and (body is not None or any(p.values or p.form for p in plan.walk()))
        op["responses"] = self.responses(route, plan, validated)
        if body is not None or form:
            for status, described in _BODY_ERRORS.items():
                op["responses"].setdefault(status, {"description": described})
            op["responses"] = dict(sorted(op["responses"].items()))
        return op

    def form_body(self, sources: list[Source]) -> dict[str, Any]:
        """A form's request body: multipart when it takes files, else urlencoded."""
        files = any(s.location == "file" for s in sources)
        wholes = [s for s in sources if s.whole]
        if len(wholes) == 1 and len(sources) == 1:
            schema = self.schema(wholes[0].type)
        else:
            properties: dict[str, Any] = {}
            required: list[str] = []
            for source in sources:
                if source.location == "file":
                    binary = {"type": "string", "contentMediaType": "application/octet-stream"}
                    properties[source.key] = {"type": "array", "items": binary} if source.many else binary
                else:
                    properties[source.key] = self.schema(source.type)
                if source.required:
                    required.append(source.key)
            schema = {"type": "object", "properties": properties}
            if required:
                schema["required"] = required
        media = "multipart/form-data" if files else "application/x-www-form-urlencoded"
        return {
            "required": any(s.required for s in sources),
            "content": {media: {"schema": schema}},
        }

    def parameters(self, route: Route, plan: Plan | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        sources = [s for p in plan.walk() for s in p.values] if plan is not None else []
        for source in sources:
            if (source.location, source.key) in seen:
                continue
            seen.add((source.location, source.key))
            out.append(self.parameter(source))
        # Path parameters of plain handlers: from the template.
        for match in PATH_PARAM.finditer(route.path):
            name, kind = match.group(1), match.group(2) or "str"
            if ("path", name) not in seen:
                seen.add(("path", name))
                schema = {"type": "integer"} if kind == "int" else {"type": "string"}
                out.append({"name": name, "in": "path", "required": True, "schema": schema})
        return out

    def parameter(self, source: Source) -> dict[str, Any]:
        item: dict[str, Any] = {
            "name": source.key,
            "in": source.location,
            "required": source.location == "path" or source.required,
            "schema": self.schema(source.type),
        }
        if not source.required and source.default is not None and source.location != "path":
            with contextlib.suppress(TypeError):  # a default with no JSON form is left out
                item["schema"] = {**item["schema"], "default": msgspec.to_builtins(source.default)}
        marker = source.marker
        if marker is not None and marker.description:
            item["description"] = marker.description
        if marker is not None and marker.deprecated:
            item["deprecated"] = True
        return item

    def responses(self, route: Route, plan: Plan | None, validated: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        ok: dict[str, Any] = {"description": "Successful Response"}
        returns = plan.returns if plan is not None else None
        if returns is not None:
            ok["content"] = {"application/json": {"schema": self.schema(returns)}}
        out["200"] = ok
        if validated:
            self._validation_error = True
            out["422"] = {
                "description": "Validation Error",
                "content": {"application/json": {"schema": {"$ref": _REF.format(name="ValidationError")}}},
            }
        for status, described in sorted(route.responses.items()):
            out[str(status)] = {"description": described}
        return out
