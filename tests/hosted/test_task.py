"""veter.hosted.task.run_app: how an app's end reaches its cycle (Python 3.11's path;
the end-to-end behaviour is in test_asgi_raw.py's error tests)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from veter.hosted.task import run_app


class _Cycle:
    def __init__(self) -> None:
        self.told: list[BaseException | None] = []

    def _veter_done(self, exc: BaseException | None, /) -> None:
        self.told.append(exc)


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(message: dict[str, Any]) -> None:
    return None


def _run(app: Any) -> tuple[_Cycle, asyncio.Task[None]]:
    cycle = _Cycle()

    async def main() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(run_app(app, {}, _receive, _send, cycle))
        await asyncio.wait([task])
        return task

    return cycle, asyncio.run(main())


def test_an_app_that_returns_is_told_with_none() -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope, receive, send))
        await asyncio.sleep(0)

    cycle, task = _run(app)
    assert cycle.told == [None]
    assert seen == [({}, _receive, _send)]
    assert task.result() is None


def test_an_exception_is_told_and_the_task_ends_normally() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise ValueError("bad app")

    cycle, task = _run(app)
    assert len(cycle.told) == 1 and isinstance(cycle.told[0], ValueError)
    assert task.exception() is None  # told once, not left for "never retrieved"


def test_a_sync_failure_of_the_call_is_told_too() -> None:
    def app(scope: Any, receive: Any, send: Any) -> None:
        raise TypeError("not an ASGI app")

    cycle, _ = _run(app)
    assert len(cycle.told) == 1 and isinstance(cycle.told[0], TypeError)


def test_cancellation_is_told_and_raised_again() -> None:
    cycle = _Cycle()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(60)

    async def main() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(run_app(app, {}, _receive, _send, cycle))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait([task])
        return task

    task = asyncio.run(main())
    assert task.cancelled()
    assert len(cycle.told) == 1 and isinstance(cycle.told[0], asyncio.CancelledError)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interpreter_exits_are_told_and_raised_again(exc: type[BaseException]) -> None:
    cycle = _Cycle()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise exc

    coro = run_app(app, {}, _receive, _send, cycle)
    with pytest.raises(exc):
        coro.send(None)
    assert len(cycle.told) == 1 and isinstance(cycle.told[0], exc)
