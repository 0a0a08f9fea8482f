"""The engine's guard: instructions per request may not grow unnoticed.

Each scenario of benchmarks/micro/core_path.py (HTTP/1.1) and h2_path.py
(HTTP/2) is counted with callgrind
(benchmarks/micro/instructions.py: two runs, their difference per request). The
count is deterministic for one build, Python and input, so it does not move with
the machine's load the way a timing does: a count more than 5% over the committed
budget in tests/perf/budgets.json is a regression and fails the test.

On the first Python (`make py-test`) every scenario is counted; on the others
(`make py-versions`, which leaves slow tests out) the scenarios where the
versions' paths differ (a handler that may become a task).

How to change a budget honestly (docs/benchmarks.md, "Instruction budgets"):
lower it in the commit that makes the code cheaper (the test prints the new count);
raise it only in a commit whose message says what the extra instructions buy.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from veter import _core

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "micro"))

from core_path import SCENARIOS as HTTP1_SCENARIOS  # noqa: E402
from h2_path import H2_SCENARIOS  # noqa: E402
from instructions import per_request  # noqa: E402

#: HTTP/1.1's scenarios (core_path.py) and HTTP/2's (h2_path.py).
SCENARIOS = {**HTTP1_SCENARIOS, **H2_SCENARIOS}

BUDGETS = json.loads((Path(__file__).with_name("budgets.json")).read_text())
TOLERANCE = 0.05
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

pytestmark = [
    pytest.mark.skipif(
        not _core.OPTIMIZED, reason="budgets are for release builds (maturin develop --release)"
    ),
    pytest.mark.timeout(600),
]


def test_every_scenario_has_a_budget_on_every_supported_python() -> None:
    for version in ("3.11", "3.12", "3.13", "3.14", "3.15"):
        assert set(BUDGETS[version]) == set(SCENARIOS), version


def _params() -> list[object]:
    """Every scenario; those whose handler cannot become a task take the same path
    on every Python and are marked slow, so `make py-versions` (CI's other
    Pythons) counts only the scenarios where versions differ (tasks, eager tasks).
    `pytest -m slow tests/perf` on any Python counts the rest against its budgets."""
    return [
        pytest.param(name, marks=() if scenario.may_suspend else pytest.mark.slow)
        for name, scenario in SCENARIOS.items()
    ]


@pytest.mark.parametrize("scenario", _params())
def test_instructions_per_request_within_budget(scenario: str) -> None:
    assert shutil.which("valgrind"), "valgrind is needed (scripts/install-services.sh installs it)"
    budget = BUDGETS[VERSION][scenario]
    count = per_request(scenario)
    limit = budget * (1 + TOLERANCE)
    print(f"{scenario}: {count} instructions/request on Python {VERSION} (budget {budget})")
    assert count <= limit, (
        f"{scenario}: {count} instructions per request on Python {VERSION}, over the budget of {budget} "
        f"by {count / budget - 1:.1%} (tolerance {TOLERANCE:.0%}). Find the cause with "
        f"benchmarks/micro/instructions.py and callgrind_annotate; raise the budget only with the reason "
        f"in the commit message."
    )
