"""Field notes 1: a handler that awaits 50 ms, at rising fixed rates."""

from pathlib import Path

from ..charts import latency_curves
from ..measure import Plan, Settings
from ..report import Result, value
from ..servers import pick
from . import ladder

NAME = "sleep50"
TITLE = "sleep50: a 50 ms await under fixed request rates"
METHOD = """
The handler awaits `asyncio.sleep(0.05)` (Tornado gen: `gen.sleep`); veter-asgi and
veter-fastapi are a raw ASGI app and a FastAPI app hosted by `veter run`. oha offers a fixed
rate (open loop, `-q RATE --latency-correction`) with enough connections for twice the
expected latency; a server stops climbing the ladder (1000 ... 16000/s) once its p99
passes 1 s or its success rate falls under 99%. One process per server on CPU 0.
"""


#: veter's own, then hosted apps (issue 14: a hosted ASGI app's p99 <= 55 ms at
#: 8,000/s on one worker), then the peers.
SERVERS = [*ladder.ASYNC_PEERS[:1], "veter-asgi", "veter-fastapi", *ladder.ASYNC_PEERS[1:]]


def plan(settings: Settings) -> Plan:
    return Plan(NAME, pick(SERVERS), ladder.cells("sleep50", 0.05, settings))


def table(result: Result) -> str:
    return ladder.table(result) + "\n\n" + _target(result)


def _target(result: Result) -> str:
    """Issue 14's target, checked against this run."""
    key = next((c["key"] for c in result["cells"] if c.get("rate") == 8000), None)
    p99 = value(result, "veter-asgi", key, "p99_ms") if key else None
    ok = value(result, "veter-asgi", key, "success") if key else None
    if p99 is None:
        return "Target from issue 14 (a hosted ASGI app, p99 <= 55 ms at 8,000/s): not measured at 8,000/s."
    verdict = "met" if p99 <= 55 and (ok or 0) >= 0.99 else "NOT met"
    return (
        f"Target from issue 14 (a hosted ASGI app, p99 <= 55 ms at 8,000/s): veter-asgi p99 "
        f"{p99:.1f} ms, {(ok or 0) * 100:.1f}% ok: {verdict}."
    )


def chart(result: Result, path: Path) -> None:
    latency_curves(result, path)
