"""Instructions per request on the core's in-memory path, counted by callgrind.

For each scenario of core_path.py, callgrind counts the instructions of the whole
process twice, with LOW and HIGH reads; the difference divided by the requests in
between is the cost of one request with start-up, imports and warm-up taken out.
Counts are deterministic for one build and input (PYTHONHASHSEED is fixed), so a
change of a few percent is real, whatever else the machine is doing.

    .venv/bin/python benchmarks/micro/instructions.py [SCENARIO ...]

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
            env={**os.environ, "SCENARIO": scenario, "N": str(reads), "PYTHONHASHSEED": "0"},
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
    for a scenario that costs ~34,000 (asgi)."""
    subprocess.run(
        [python, str(HERE / script)],
        env={**os.environ, "SCENARIO": scenario, "N": "1", "PYTHONHASHSEED": "0"},
        capture_output=True,
        check=True,
    )


def _scenarios() -> dict[str, int]:
    """core_path.py's scenarios and their requests per read (imports veter)."""
    from core_path import SCENARIOS

    return {name: scenario.per_read for name, scenario in SCENARIOS.items()}


def _floor_reads() -> dict[str, int]:
    """floor_path.py's scenarios (imports httptools)."""
    from floor_path import PER_READ

    return PER_READ


def main() -> None:
    args = sys.argv[1:]
    floor = "--floor" in args
    names = [a for a in args if a != "--floor"] or list(_floor_reads() if floor else _scenarios())
    for name in names:
        label = f"floor {name}" if floor else name
        print(f"{label:16} {per_request(name, floor=floor):>7,} instructions/request", flush=True)


if __name__ == "__main__":
    main()
