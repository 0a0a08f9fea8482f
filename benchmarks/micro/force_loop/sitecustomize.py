"""Run another event loop wherever uvloop would run, without changing veter.

With this directory on PYTHONPATH and VETER_FORCE_LOOP=zuvloop, every Python process
of that environment (a test run, the servers it starts, a benchmark's server) gets
zuvloop's loop where it asks uvloop for one: veter's ``--loop auto`` and ``uvloop``
(veter.loops returns ``uvloop.new_event_loop``), TestClient, and uvicorn's
``--loop uvloop`` alike. How the zuvloop measurements and the test run on zuvloop in
benchmarks/notes/pythons.md were made, before veter had a choice for it:

    PYTHONPATH=benchmarks/micro/force_loop:benchmarks/.work/zuvloop-3.14 \\
        VETER_FORCE_LOOP=zuvloop .venv-3.14/bin/python -m pytest -q -m "not slow"

(``pip install --no-deps --target benchmarks/.work/zuvloop-3.14 zuvloop`` puts zuvloop
there without touching the venv.) A process that cannot import the forced loop stops
at start-up rather than quietly running uvloop.
"""

import os
import sys

_forced = os.environ.get("VETER_FORCE_LOOP")
if _forced:
    if _forced != "zuvloop":
        sys.exit(f"VETER_FORCE_LOOP={_forced!r}: only 'zuvloop' is known")
    import uvloop
    import zuvloop

    uvloop.new_event_loop = zuvloop.new_event_loop
    uvloop.run = zuvloop.run
    uvloop.Loop = zuvloop.EventLoop  # type: ignore[misc]
