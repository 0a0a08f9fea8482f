"""The db scenario's shared piece for asyncio apps: a lazily created asyncpg pool and
the one query every app runs (one row of 10,000 by a random id)."""

import asyncio
import os
import random

import asyncpg

QUERY = "SELECT id, name, qty FROM items WHERE id = $1"
ROWS = 10_000
POOL_SIZE = 10


class LazyPool:
    """Created on first use inside the server's own loop, so no framework hook is needed."""

    def __init__(self) -> None:
        self._pool: asyncpg.Pool | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> asyncpg.Pool:
        if self._pool is None:
            async with self._lock:
                if self._pool is None:
                    self._pool = await asyncpg.create_pool(
                        os.environ["DATABASE_URL"], min_size=POOL_SIZE, max_size=POOL_SIZE
                    )
        return self._pool

    async def random_item(self) -> dict[str, object]:
        pool = await self.get()
        row = await pool.fetchrow(QUERY, random.randint(1, ROWS))
        return dict(row)
