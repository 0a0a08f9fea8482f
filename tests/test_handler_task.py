"""veter.handler_task.run_handler: how a suspending handler's result reaches its
completion when its task is not started eagerly (end to end: every async handler test
on Python 3.11, and the deadline tests, whose cancellation comes this way)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from veter.handler_task import run_handler


class _Completion:
    def __init__(self) -> None:
        self.told: list[tuple[Any, BaseException | None]] = []

    def _veter_done(self, result: Any, exc: BaseException | None, /) -> None:
        self.told.append((result, exc))


def _run(coro: Any, completion: _Completion) -> asyncio.Task[None]:
    async def main() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(run_handler(coro, completion))
        await asyncio.wait([task])
        return task

    return asyncio.run(main())


def test_the_result_is_handed_over() -> None:
    async def handler() -> dict[str, str]:
        await asyncio.sleep(0)
        return {"message": "hi"}

    completion = _Completion()
    task = _run(handler(), completion)
    assert completion.told == [({"message": "hi"}, None)]
    assert task.result() is None


def test_an_exception_is_handed_over_and_the_task_ends_normally() -> None:
    async def handler() -> None:
        raise LookupError("no such thing")

    completion = _Completion()
    task = _run(handler(), completion)
    [(result, exc)] = completion.told
    assert result is None and isinstance(exc, LookupError)
    assert task.exception() is None


def test_cancellation_is_handed_over_and_raised_again() -> None:
    completion = _Completion()

    async def handler() -> None:
        await asyncio.sleep(60)

    async def main() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(run_handler(handler(), completion))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait([task])
        return task

    task = asyncio.run(main())
    assert task.cancelled()
    [(result, exc)] = completion.told
    assert result is None and isinstance(exc, asyncio.CancelledError)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interpreter_exits_are_handed_over_and_raised_again(exc: type[BaseException]) -> None:
    async def handler() -> None:
        raise exc

    completion = _Completion()
    coro = run_handler(handler(), completion)
    with pytest.raises(exc):
        coro.send(None)
    [(result, told)] = completion.told
    assert result is None and isinstance(told, exc)
