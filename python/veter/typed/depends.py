"""Dependencies (``Depends``): made per request, cached, cleaned up, overridable.

Per request: every plan of the tree (the handler's and each dependency's, with
the app's overrides in place) has its values read first, so a 422 lists the
problems of all of them and no dependency runs for a request that does not
validate. Then the dependencies are called depth first, each callable once
(unless ``use_cache=False``); generator dependencies are run to their ``yield``
and finished, in reverse order, when the handler has returned (or raised: the
exception is thrown into them, as ``contextlib`` does).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, MutableMapping
from typing import Any

from veter.background import BackgroundTasks
from veter.exceptions import RequestValidationError
from veter.typed.explain import Problem
from veter.typed.forms import FormReader, form_reader
from veter.typed.signature import Plan, dependency_plan

__all__ = ["Solver", "body_bytes", "finish"]

log = logging.getLogger("veter.error")


async def body_bytes(request: Any, streams: bool) -> bytes:
    """The whole body: read before the handler started, or (``streams``) as it arrives."""
    if streams:
        return b"".join([chunk async for chunk in request.stream()])
    body: bytes = await request.body()
    return body


Reader = Callable[[Any, dict[str, Any]], dict[str, Any]]
BodyReader = Callable[[Any, bytes], Any]


class _Node:
    """A plan with its readers, and its dependencies' nodes."""

    def __init__(
        self, plan: Plan, make_reader: Callable[[Plan], Reader], make_body: Callable[[Plan], Any]
    ) -> None:
        self.plan = plan
        self.read_values = make_reader(plan)
        self.read_body: BodyReader | None = make_body(plan)
        self.read_form: FormReader | None = form_reader(plan)
        self.kind = _kind(plan.handler)
        self.deps = [(dep, _Node(dep.plan, make_reader, make_body)) for dep in plan.dependencies]


class Solver:
    """Calls a handler whose plan has dependencies."""

    def __init__(
        self,
        plan: Plan,
        make_reader: Callable[[Plan], Reader],
        make_body: Callable[[Plan], BodyReader | None],
        overrides: MutableMapping[Callable[..., Any], Callable[..., Any]],
        path_names: set[str],
        where: str,
        *,
        streams: bool = False,
    ) -> None:
        self._streams = streams
        self._make_reader = make_reader
        self._make_body = make_body
        self._overrides = overrides
        self._path_names = path_names
        self._where = where
        self._root = _Node(plan, make_reader, make_body)
        self._replaced: dict[Callable[..., Any], _Node] = {}

    def _node_of(self, dep: Any, node: _Node) -> tuple[Callable[..., Any], _Node]:
        if self._overrides:
            replacement = self._overrides.get(dep.call)
            if replacement is not None:
                found = self._replaced.get(replacement)
                if found is None:
                    plan = dependency_plan(
                        replacement, self._path_names, f"{self._where}: override of {dep.name!r}"
                    )
                    found = _Node(plan, self._make_reader, self._make_body)
                    self._replaced[replacement] = found
                return replacement, found
        return dep.call, node

    async def arguments(
        self, request: Any, path: dict[str, Any], exits: list[Any], tasks: BackgroundTasks
    ) -> dict[str, Any]:
        """The handler's keyword arguments, its dependencies called; generators to
        finish are appended to ``exits``; ``tasks`` goes to every plan asking for
        the request's background tasks."""
        values: dict[int, dict[str, Any]] = {}
        problems: list[Problem] = []
        self._collect(self._root, request, path, values, problems)
        if problems:
            unique = {(tuple(p["loc"]), p["msg"]): p for p in problems}
            raise RequestValidationError(list(unique.values()))
        body = await self._body(request)
        cache: dict[Callable[..., Any], Any] = {}
        return await self._resolve(self._root, request, values, body, cache, exits, tasks)

    def _collect(
        self,
        node: _Node,
        request: Any,
        path: dict[str, Any],
        values: dict[int, dict[str, Any]],
        problems: list[Problem],
    ) -> None:
        if id(node) in values:
            return
        try:
            values[id(node)] = node.read_values(request, path)
        except RequestValidationError as error:
            values[id(node)] = {}
            problems.extend(error.errors)
        for dep, child in node.deps:
            self._collect(self._node_of(dep, child)[1], request, path, values, problems)

    async def _body(self, request: Any) -> dict[int, dict[str, Any]]:
        """The keyword arguments read from the body (a JSON body decoded, form
        fields and files), for each node that reads it."""
        found: dict[int, dict[str, Any]] = {}
        stack = [self._root]
        while stack:
            node = stack.pop()
            if id(node) not in found:
                if node.read_body is not None and node.plan.body is not None:
                    raw = await body_bytes(request, self._streams)
                    found[id(node)] = {node.plan.body.name: node.read_body(request, raw)}
                elif node.read_form is not None:
                    found[id(node)] = await node.read_form(request)
            stack.extend(self._node_of(dep, child)[1] for dep, child in node.deps)
        return found

    async def _resolve(
        self,
        node: _Node,
        request: Any,
        values: dict[int, dict[str, Any]],
        body: dict[int, dict[str, Any]],
        cache: dict[Callable[..., Any], Any],
        exits: list[Any],
        tasks: BackgroundTasks,
    ) -> dict[str, Any]:
        kwargs = dict(values[id(node)])
        plan = node.plan
        if plan.request_name is not None:
            kwargs[plan.request_name] = request
        if plan.background is not None:
            kwargs[plan.background] = tasks
        if id(node) in body:
            kwargs.update(body[id(node)])
        for dep, child in node.deps:
            call, target = self._node_of(dep, child)
            if dep.use_cache and call in cache:
                kwargs[dep.name] = cache[call]
                continue
            arguments = await self._resolve(target, request, values, body, cache, exits, tasks)
            value = await _invoke(call, target.kind, arguments, exits)
            if dep.use_cache:
                cache[call] = value
            kwargs[dep.name] = value
        return kwargs


def _kind(call: Callable[..., Any]) -> str:
    target = call if inspect.isroutine(call) else getattr(type(call), "__call__", call)  # noqa: B004
    if inspect.isasyncgenfunction(target):
        return "async-generator"
    if inspect.isgeneratorfunction(target):
        return "generator"
    if inspect.iscoroutinefunction(target):
        return "async"
    return "sync"


async def _invoke(call: Callable[..., Any], kind: str, arguments: dict[str, Any], exits: list[Any]) -> Any:
    if kind == "async":
        return await call(**arguments)
    if kind == "async-generator":
        agen = call(**arguments)
        value = await agen.__anext__()
        exits.append(agen)
        return value
    if kind == "generator":
        gen = call(**arguments)
        value = next(gen)
        exits.append(gen)
        return value
    return call(**arguments)


async def finish(exits: list[Any], error: BaseException | None) -> None:
    """Runs the generator dependencies' cleanup, last made first. An error in a
    cleanup is logged; the request's outcome stands."""
    for gen in reversed(exits):
        try:
            if inspect.isasyncgen(gen):
                if error is None:
                    await gen.__anext__()
                else:
                    await gen.athrow(error)
            elif error is None:
                next(gen)
            else:
                gen.throw(error)
        except (StopIteration, StopAsyncIteration):
            continue
        except BaseException as raised:
            if raised is not error:
                log.exception("a dependency's cleanup failed")
            continue
        log.error("dependency %r yielded more than once; only one value is used", gen)
    exits.clear()
