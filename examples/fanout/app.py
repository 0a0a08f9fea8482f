"""Field notes, section 1: a handler that calls another service, then two more
concurrently, then writes to PostgreSQL, and answers.

    BACKEND_URL=http://127.0.0.1:8001 DATABASE_URL=postgresql://... \\
        veter run examples.fanout.app:app --port 8000
    curl http://127.0.0.1:8000/fanout/7

Every outside call is bounded: the client's timeouts (connect, read, total, DNS) and
the pool's acquire timeout. A slow or dead backend answers 504/502, a busy or
unreachable database 503 with Retry-After; /readyz is false until PostgreSQL is reached.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import veter
from veter.client import HttpClient, Timeouts
from veter.health import enable
from veter.pools import PostgresPool

SCHEMA = """
CREATE TABLE IF NOT EXISTS fanout_views (
    id bigserial PRIMARY KEY,
    user_id integer NOT NULL,
    recommendations integer[] NOT NULL,
    ads text[] NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
)
"""
INSERT = "INSERT INTO fanout_views (user_id, recommendations, ads) VALUES ($1, $2, $3) RETURNING id"


BACKEND_TIMEOUTS = Timeouts(connect=1.0, read=2.0, total=3.0, dns=1.0)


def create_app(database_url: str, backend_url: str, timeouts: Timeouts = BACKEND_TIMEOUTS) -> veter.App:
    app = veter.App()
    enable(app)
    pg = PostgresPool(
        app,
        dsn=database_url,
        max_size=int(os.environ.get("FANOUT_PG_POOL", "10")),
        acquire_timeout=2.0,
    )
    backend = HttpClient(
        app,
        name="backend",
        base_url=backend_url,
        timeouts=timeouts,
        limit_per_host=int(os.environ.get("FANOUT_CONNECTIONS", "50")),
    )

    @app.on_startup
    async def create_schema() -> None:
        # Runs after the pool's own startup hook. If PostgreSQL is down now, the pool
        # keeps reconnecting in the background and /readyz stays false until it is back.
        if pg.ready:
            await pg.execute(SCHEMA)

    @app.get("/")
    def index(request: veter.Request) -> str:
        return "fanout"

    @app.get("/fanout/{user_id:int}")
    async def fanout(request: veter.Request, user_id: int) -> dict[str, Any]:
        user = await backend.get_json(f"/users/{user_id}")
        recommendations, ads = await asyncio.gather(
            backend.get_json(f"/recommendations/{user['segment']}"),
            backend.get_json(f"/ads/{user['segment']}"),
        )
        view_id = await pg.fetchval(INSERT, user_id, recommendations, ads)
        return {"user": user, "recommendations": recommendations, "ads": ads, "view": view_id}

    return app


app = create_app(
    os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
    os.environ.get("BACKEND_URL", "http://127.0.0.1:8001"),
)
