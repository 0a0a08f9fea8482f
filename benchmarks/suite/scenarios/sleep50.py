"""Field notes 1: a handler that awaits 50 ms, at rising fixed rates."""

from pathlib import Path

from ..charts import latency_curves
from ..measure import Plan, Settings
from ..report import Result
from ..servers import pick
from . import ladder

NAME = "sleep50"
TITLE = "sleep50: a 50 ms await under fixed request rates"
METHOD = """
The handler awaits `asyncio.sleep(0.05)` (Tornado gen: `gen.sleep`). oha offers a fixed
rate (open loop, `-q RATE --latency-correction`) with enough connections for twice the
expected latency; a server stops climbing the ladder (1000 ... 16000/s) once its p99
passes 1 s or its success rate falls under 99%. One process per server on CPU 0.
"""


def plan(settings: Settings) -> Plan:
    return Plan(NAME, pick(ladder.ASYNC_PEERS), ladder.cells("sleep50", 0.05, settings))


def table(result: Result) -> str:
    return ladder.table(result)


def chart(result: Result, path: Path) -> None:
    latency_curves(result, path)
