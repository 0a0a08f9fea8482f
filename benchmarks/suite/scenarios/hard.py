"""Field notes 1, benchmark 2: sequential, concurrent and timed-out awaits (~125 ms)."""

from pathlib import Path

from ..charts import latency_curves
from ..measure import Plan, Settings
from ..report import Result
from ..servers import pick
from . import ladder

NAME = "hard"
TITLE = "hard: await work(); two work() at once; work() under a timeout (~125 ms)"
METHOD = """
work() sleeps 50 ms. The handler awaits work(), then two work() concurrently
(`asyncio.gather`), then work() under a timeout of half its time with the timeout
error swallowed (`asyncio.wait_for`; Tornado gen: `gen.with_timeout`), so ~125 ms is
expected. Same open-loop ladder and give-up rule as sleep50.
"""


def plan(settings: Settings) -> Plan:
    return Plan(NAME, pick(ladder.ASYNC_PEERS), ladder.cells("hard", 0.125, settings))


def table(result: Result) -> str:
    return ladder.table(result)


def chart(result: Result, path: Path) -> None:
    latency_curves(result, path)
