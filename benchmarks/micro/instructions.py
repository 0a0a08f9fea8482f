"""Instructions per request on the core's in-memory path, counted by callgrind.

For each scenario of core_path.py, callgrind counts the instructions of the whole
process twice, with LOW and HIGH reads; the difference divided by the requests in
between is the cost of one request with start-up, imports and warm-up taken out.
Counts are deterministic for one build and input (PYTHONHASHSEED is fixed), so a
change of a few percent is real, whatever else the machine is doing.

    .venv/bin/python benchmarks/micro/instructions.py [SCENARIO ...]

The HTTP/2 scenarios of h2_path.py (``h2_plaintext``, ``h2_post``, ``h2_asgi``)
are counted the same way; while the core answers the HTTP/2
preface with anything but HTTP/2 they are
skipped, with what it answered.

With ``--floor`` it counts the Python floor instead (floor_path.py: plaintext and
pipelined), run by an interpreter that has httptools and uvloop, e.g.
``benchmarks/.work/venv-peers/bin/python``.

The guard (tests/perf/test_instructions.py) uses this against the budgets in
tests/perf/budgets.json.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

LOW, HIGH = 200, 2200
_TOTAL = re.compile(r"Collected\s*:\s*(\d+)")


class NotHttp2(RuntimeError):
    """An HTTP/2 scenario could not run: the core did not answer the preface with HTTP/2."""


def _env(scenario: str, reads: int) -> dict[str, str]:
    # READS_MADE: h2_path.py builds its reads up front, as many in both runs.
    return {**os.environ, "SCENARIO": scenario, "N": str(reads), "PYTHONHASHSEED": "0", "READS_MADE": str(HIGH)}


def _count(python: str, scenario: str, reads: int, script: str = "core_path.py") -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                python,
                str(HERE / script),
            ],
            env=_env(scenario, reads),
            capture_output=True,
            text=True,
            check=False,
        )
    match = _TOTAL.search(out.stderr)
    if out.returncode != 0 or match is None:
        raise RuntimeError(f"callgrind run of {scenario} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return int(match.group(1))


def per_request(scenario: str, python: str = sys.executable, floor: bool = False) -> int:
    """Instructions one request of ``scenario`` costs (of the floor's, with ``floor``)."""
    if floor:
        script, per_read = "floor_path.py", _floor_reads()[scenario]
    elif scenario in _h2_scenarios():
        script, per_read = "h2_path.py", _h2_scenarios()[scenario]
    else:
        script, per_read = "core_path.py", _scenarios()[scenario]
    _warm(python, scenario, script)
    with ThreadPoolExecutor(2) as pool:
        low, high = pool.map(lambda n: _count(python, scenario, n, script), (LOW, HIGH))
    return round((high - low) / ((HIGH - LOW) * per_read))


def _warm(python: str, scenario: str, script: str) -> None:
    """Runs the scenario once outside callgrind, so that every module it imports
    has its bytecode cached before the two counted runs. Otherwise both compile
    what was edited since, at once, and which of them does more of it varies:
    a first count after editing veter's Python read anywhere from 17,700 to 63,000
    for a scenario that costs ~34,000 (asgi). Raises NotHttp2 when an HTTP/2
    scenario finds the core does not speak it."""
    from h2_path import NOT_HTTP2

    out = subprocess.run([python, str(HERE / script)], env=_env(scenario, 1), capture_output=True, text=True)
    if script == "h2_path.py" and out.returncode == NOT_HTTP2:
        raise NotHttp2(out.stderr.strip().splitlines()[-1])
    if out.returncode != 0:
        raise RuntimeError(f"{script} {scenario} failed ({out.returncode}):\n{out.stderr[-3000:]}")


def _scenarios() -> dict[str, int]:
    """core_path.py's scenarios and their requests per read (imports veter)."""
    from core_path import SCENARIOS

    return {name: scenario.per_read for name, scenario in SCENARIOS.items()}


def _h2_scenarios() -> dict[str, int]:
    """h2_path.py's scenarios and their requests per read (imports veter)."""
    from h2_path import H2_SCENARIOS

    return {name: scenario.per_read for name, scenario in H2_SCENARIOS.items()}


def _floor_reads() -> dict[str, int]:
    """floor_path.py's scenarios (imports httptools)."""
    from floor_path import PER_READ

    return PER_READ


def main() -> None:
    args = sys.argv[1:]
    floor = "--floor" in args
    names = [a for a in args if a != "--floor"] or list(_floor_reads() if floor else _scenarios() | _h2_scenarios())
    for name in names:
        label = f"floor {name}" if floor else name
        try:
            count = per_request(name, floor=floor)
        except NotHttp2 as exc:
            print(f"{label:16} skipped: {exc}", flush=True)
            continue
        print(f"{label:16} {count:>7,} instructions/request", flush=True)


if __name__ == "__main__":
    main()
