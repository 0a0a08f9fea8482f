"""/healthz and /readyz: readiness needs startup done, no draining, and every check."""

from __future__ import annotations

import asyncio

import pytest

import veter
from veter.health import Health, NotReady, enable
from veter.testing import AsyncTestClient


async def test_liveness_and_readiness_follow_the_app_and_its_checks() -> None:
    app = veter.App()
    health = enable(app, healthz="/live", readyz="/ready", check_timeout=0.2)
    state = {"db": True}
    health.add_check("db", lambda: state["db"])

    async def cache() -> bool:
        return True

    health.add_check("cache", cache)
    client = AsyncTestClient(app)

    before = await client.get("/ready")  # startup hooks have not run
    assert before.status == 503 and before.json()["app"] == "starting"

    async with client:
        assert (await client.get("/live")).json() == {"alive": True}
        ready = await client.get("/ready")
        assert ready.status == 200
        assert ready.json() == {"ready": True, "app": "started", "checks": {"db": "ok", "cache": "ok"}}

        state["db"] = False
        failing = await client.get("/ready")
        assert failing.status == 503 and failing.json()["checks"]["db"] == "failing"

        state["db"] = True
        app.begin_draining()
        draining = await client.get("/ready")
        assert draining.status == 503 and draining.json()["app"] == "draining"
        assert (await client.get("/live")).status == 200


async def test_check_reasons_errors_and_timeouts() -> None:
    app = veter.App()
    health = enable(app, check_timeout=0.1)

    def down() -> bool:
        raise NotReady("connecting: refused")

    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    health.add_check("pg", down)
    health.add_check("slow", hangs)
    async with AsyncTestClient(app) as client:
        report = (await client.get("/readyz")).json()
    assert report["checks"] == {"pg": "failing: connecting: refused", "slow": "failing: no answer in 0.1 s"}


def test_registry_rules() -> None:
    app = veter.App()
    health = Health.of(app)
    assert Health.of(app) is health
    health.add_check("x", lambda: True)
    with pytest.raises(ValueError, match="already registered"):
        health.add_check("x", lambda: True)
    health.remove_check("x")
    assert health.check_names == []
    with pytest.raises(TypeError, match="not callable"):
        health.add_check("y", 3)  # type: ignore[arg-type]
    enable(app)
    with pytest.raises(RuntimeError, match="already served"):
        enable(app)
    with pytest.raises(ValueError, match="check_timeout"):
        enable(veter.App(), check_timeout=0)
