"""An app that reports on the cyclic garbage collector (tests/e2e/test_collector.py)."""

import gc
import weakref

import veter

app = veter.App()


class _Node:
    def __init__(self) -> None:
        self.me = self


@app.get("/frozen")
def frozen(request: veter.Request) -> dict[str, int]:
    """How many objects the collector skips (gc.freeze) and how many it still tracks."""
    return {"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}


@app.get("/cycle-collected")
def cycle_collected(request: veter.Request) -> dict[str, bool]:
    """Whether a reference cycle made while serving is still collected."""
    ref = weakref.ref(_Node())
    alive_before = ref() is not None
    gc.collect()
    return {"alive_before": alive_before, "collected": ref() is None}


@app.get("/threshold")
def threshold(request: veter.Request) -> dict[str, list[int]]:
    """The collector's thresholds in this process."""
    return {"threshold": list(gc.get_threshold())}


@app.get("/cycles-collected-unasked")
def cycles_collected_unasked(request: veter.Request) -> dict[str, bool]:
    """Whether cycles made while serving are collected without ``gc.collect``: cyclic
    garbage past the young generation's threshold starts a collection of its own."""
    first = weakref.ref(_Node())
    for _ in range(2 * gc.get_threshold()[0] + 1_000):
        _Node()
    return {"collected": first() is None}


@app.get("/threshold-after-garbage")
def threshold_after_garbage(request: veter.Request) -> dict[str, list[int]]:
    """The thresholds once young collections have found almost nothing but cycles."""
    for _ in range(3 * gc.get_threshold()[0] + 1_000):
        _Node()
    return {"threshold": list(gc.get_threshold())}


@app.get("/threshold-holding")
def threshold_holding(request: veter.Request) -> dict[str, list[int]]:
    """The thresholds once young collections have found 100,000 objects alive and no garbage."""
    held = [_Node() for _ in range(100_000)]
    got = list(gc.get_threshold())
    del held
    return {"threshold": got}
