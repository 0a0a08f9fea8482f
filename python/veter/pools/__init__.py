"""Database pools, declared on the app and opened in each worker.

    pg = PostgresPool(app, dsn="postgresql://...")   # app.state.pg
    cache = RedisPool(app, url="redis://...")        # app.state.redis
    db = MySQLPool(app, url="mysql://...")           # app.state.mysql

Each driver is an optional extra (``veter[postgres]``, ``veter[redis]``,
``veter[mysql]``); a pool's module is imported only when its class is first used.
See docs/toolkit.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from veter.pools.base import Pool
from veter.pools.errors import PoolError, PoolTimeout, PoolUnavailable

if TYPE_CHECKING:
    from veter.pools.mysql import MySQLPool
    from veter.pools.postgres import PostgresPool
    from veter.pools.redis import RedisPool

__all__ = ["MySQLPool", "Pool", "PoolError", "PoolTimeout", "PoolUnavailable", "PostgresPool", "RedisPool"]

_LAZY = {
    "PostgresPool": ("veter.pools.postgres", "postgres"),
    "RedisPool": ("veter.pools.redis", "redis"),
    "MySQLPool": ("veter.pools.mysql", "mysql"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'veter.pools' has no attribute {name!r}")
    module, extra = _LAZY[name]
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{name} needs its driver: pip install 'veter[{extra}]' ({exc})") from exc
    return getattr(loaded, name)
