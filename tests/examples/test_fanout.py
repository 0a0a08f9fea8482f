"""examples/fanout against a real backend (veter on loopback) and a real PostgreSQL:
it answers with what it gathered and writes the view; a dead backend is a 502, a
silent one a 504, and the database going away a 503 with Retry-After."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from examples.fanout import backend
from examples.fanout.app import create_app
from tests.client.servers import silent_server
from tests.services import Postgres, free_port
from veter.client import Timeouts
from veter.server import Server
from veter.testing import AsyncTestClient

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def backend_url() -> AsyncIterator[str]:
    server = Server(backend.app, backend.app.config.with_(host="127.0.0.1", port=0))
    await server.start()
    yield f"http://127.0.0.1:{server.port}"
    server.request_stop()
    await server.stop()


async def test_fanout_gathers_and_writes(postgres_server: Postgres, backend_url: str) -> None:
    app = create_app(postgres_server.dsn, backend_url)
    async with AsyncTestClient(app) as client:
        assert (await client.get("/readyz")).status == 200
        answer = await client.get("/fanout/9")
        assert answer.status == 200, answer.text
        body = answer.json()
        assert body["user"] == {"id": 9, "name": "user-9", "segment": 2}
        assert body["recommendations"] == [200, 201, 202, 203, 204]
        assert body["ads"] == ["ad-2-0", "ad-2-1", "ad-2-2"]
        row = await app.state.pg.fetchrow("SELECT user_id, ads FROM fanout_views WHERE id = $1", body["view"])
        assert row["user_id"] == 9 and row["ads"] == body["ads"]


async def test_fanout_when_its_dependencies_fail(postgres_server: Postgres) -> None:
    async with silent_server() as silent_port:
        dead = create_app(postgres_server.dsn, f"http://127.0.0.1:{free_port()}")
        async with AsyncTestClient(dead) as client:
            assert (await client.get("/fanout/1")).status == 502
        silent = create_app(
            postgres_server.dsn, f"http://127.0.0.1:{silent_port}", Timeouts(read=0.2, total=1)
        )
        async with AsyncTestClient(silent) as client:
            assert (await client.get("/fanout/1")).status == 504


async def test_fanout_answers_503_while_the_database_is_down(backend_url: str) -> None:
    database = Postgres()  # never started
    try:
        app = create_app(database.dsn, backend_url)
        async with AsyncTestClient(app) as client:
            assert (await client.get("/readyz")).status == 503
            answer = await client.get("/fanout/3")
            assert answer.status == 503 and answer.headers["retry-after"] == "1"
    finally:
        database.close()
