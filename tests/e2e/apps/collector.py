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
