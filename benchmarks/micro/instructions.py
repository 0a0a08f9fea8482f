"""Instructions per request on the core's in-memory path, counted by callgrind.

For each scenario of core_path.py, callgrind counts the instructions of the whole
process twice, with LOW and HIGH reads; the difference divided by the requests in
between is the cost of one request with start-up, imports and warm-up taken out.
Counts are deterministic for one build and input (PYTHONHASHSEED is fixed), so a
change of a few percent is real, whatever else the machine is doing.

    .venv/bin/python benchmarks/micro/instructions.py [SCENARIO ...]

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

from core_path import SCENARIOS  # noqa: E402

LOW, HIGH = 200, 2200
_TOTAL = re.compile(r"Collected\s*:\s*(\d+)")


def _count(python: str, scenario: str, reads: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                python,
                str(HERE / "core_path.py"),
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


def per_request(scenario: str, python: str = sys.executable) -> int:
    """Instructions one request of ``scenario`` costs."""
    with ThreadPoolExecutor(2) as pool:
        low, high = pool.map(lambda n: _count(python, scenario, n), (LOW, HIGH))
    requests = (HIGH - LOW) * SCENARIOS[scenario].per_read
    return round((high - low) / requests)


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    for name in names:
        print(f"{name:10} {per_request(name):>7,} instructions/request", flush=True)


if __name__ == "__main__":
    main()
