"""Session-wide fixtures: private database servers, started on first use (see
tests/services.py) and stopped when the session ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services import MariaDB, Postgres, Redis


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    server = Postgres()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Redis]:
    server = Redis()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDB]:
    server = MariaDB()
    server.start()
    yield server
    server.close()
