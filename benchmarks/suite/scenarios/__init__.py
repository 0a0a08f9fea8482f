"""Scenarios, in the order `all` runs them. Each module has NAME, TITLE, METHOD,
plan(settings), table(result) and chart(result, path)."""

from types import ModuleType

from . import (
    accesslog,
    asgi,
    blocking,
    db,
    engine,
    fanout,
    hard,
    hello,
    http2,
    matrix,
    overload,
    pythons,
    redis_log,
    scaling,
    sleep50,
    typed,
    wheels,
    ws,
    wsgi,
)

ORDER: list[ModuleType] = [
    engine,
    asgi,
    wsgi,
    typed,
    wheels,
    pythons,
    hello,
    sleep50,
    hard,
    matrix,
    db,
    redis_log,
    blocking,
    fanout,
    scaling,
    overload,
    accesslog,
    ws,
    http2,
]
BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in ORDER}
