"""Running cases against the servers for a bounded time, and the report."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.hosted.fuzz.cases import Case, generate
from tests.hosted.fuzz.compare import compare, own_faults
from tests.hosted.fuzz.rules import Side
from tests.hosted.fuzz.servers import PEERS, VETER, Server
from tests.hosted.fuzz.wire import exchange

# A case's hard limit on each server: a client still waiting then is a hang.
CASE_TIMEOUT = 8.0
SHOWN_BYTES = 600


@dataclass
class Report:
    cases: Counter[int] = field(default_factory=Counter)  # by seed
    same: int = 0
    allowed: Counter[str] = field(default_factory=Counter)
    known: Counter[str] = field(default_factory=Counter)  # open bugs, by their xfail test
    peer_faults: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"cases run: {sum(self.cases.values())} ({', '.join(f'seed {s}: {n}' for s, n in self.cases.items())})",
            f"comparisons equal: {self.same}",
            f"failures: {len(self.failures)}",
        ]
        lines += [f"allowed by rule {name}: {n}" for name, n in sorted(self.allowed.items())]
        lines += [
            f"known veter bug (tests/hosted/test_fuzz_findings.py::{n}): {c}"
            for n, c in sorted(self.known.items())
        ]
        lines += [f"peer fault (not veter's) {name}: {n}" for name, n in sorted(self.peer_faults.items())]
        return "\n".join(lines)


def observe(server: Server, case: Case) -> Side:
    got = exchange(server.port, case, CASE_TIMEOUT)
    records, running = server.fence()
    prefix = case.name + "."
    by_index = {int(str(r["id"])[len(prefix) :]): r for r in records if str(r["id"]).startswith(prefix)}
    return Side(server.spec.name, got, by_index, running)


def _shown(case: Case) -> str:
    data = case.payload()
    if len(data) <= SHOWN_BYTES:
        return repr(data)
    return f"{data[: SHOWN_BYTES // 2]!r} ... {data[-SHOWN_BYTES // 2 :]!r} ({len(data)} bytes)"


def _failure(case: Case, what: str, detail: str) -> str:
    return (
        f"FAILED seed {case.seed} case {case.index}: {what}\n"
        f"replay: VETER_FUZZ_SEED={case.seed} VETER_FUZZ_CASE={case.index} python -m tests.hosted.fuzz\n"
        f"{case.describe()}\nbytes: {_shown(case)}\n{detail}"
    )


def run_case(case: Case, servers: dict[str, Server], report: Report) -> None:
    report.cases[case.seed] += 1
    for interface, veter_spec in VETER.items():
        veter = observe(servers[veter_spec.name], case)
        faults = own_faults(case, veter)
        if faults:
            report.failures.append(_failure(case, f"{veter.server} on its own", "\n".join(faults)))
        for spec in PEERS:
            if spec.interface != interface or spec.name not in servers:
                continue
            peer = observe(servers[spec.name], case)
            for fault in own_faults(case, peer):
                report.peer_faults[f"{spec.name}: {re.sub(r'[0-9]+', 'N', fault)[:90]}"] += 1
            verdict = compare(case, veter, peer)
            if verdict.outcome == "same":
                report.same += 1
            elif verdict.outcome == "allowed":
                assert verdict.rule is not None
                report.allowed[verdict.rule] += 1
            elif verdict.outcome == "known":
                assert verdict.rule is not None
                report.known[verdict.rule] += 1
            else:
                report.failures.append(_failure(case, f"{veter.server} vs {spec.name}", verdict.detail))
    for server in servers.values():
        if not server.alive():
            raise RuntimeError(f"{server.spec.name} died:\n{server.proc.output()}")


def run(
    servers: dict[str, Server],
    seeds: Iterable[int],
    seconds: float,
    *,
    only_case: int | None = None,
    max_failures: int = 5,
) -> Report:
    """Cases of each seed in turn, ``seconds`` split evenly among the seeds."""
    report = Report()
    seeds = list(seeds)
    for seed in seeds:
        if len(report.failures) >= max_failures:
            break
        deadline = time.monotonic() + seconds / len(seeds)
        for case in generate(seed):
            if only_case is not None and case.index < only_case:
                continue
            run_case(case, servers, report)
            if only_case is not None or time.monotonic() > deadline or len(report.failures) >= max_failures:
                break
    return report
