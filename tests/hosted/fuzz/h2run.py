"""The HTTP/2 run: each case's frames to veter (h2c) and to Hypercorn, both hosting
the probe ASGI app; per stream, what the client got and what the app saw must
agree after rules.py's HTTP/2 normalisations, or a named difference explains the
first that does not."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from typing import Any

from tests.hosted.fuzz.h2cases import BODY_MALFORMED, H2Case, generate_h2
from tests.hosted.fuzz.h2wire import H2Exchange, exchange_h2
from tests.hosted.fuzz.rules import (
    H2Context,
    H2Side,
    h2_allowed,
    h2_answer_view,
    h2_known_bug,
    h2_record_view,
)
from tests.hosted.fuzz.run import CASE_TIMEOUT, Report
from tests.hosted.fuzz.servers import H2_PEER, VETER, Server

SHOWN_BYTES = 400


def observe(server: Server, case: H2Case) -> H2Side:
    got = exchange_h2(server.port, case, CASE_TIMEOUT)
    records, running = server.fence()
    prefix = case.name + "."
    by_index = {int(str(r["id"])[len(prefix) :]): r for r in records if str(r["id"]).startswith(prefix)}
    return H2Side(server.spec.name, got, by_index, running)


def views(case: H2Case, side: H2Side, i: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    ex = side.exchange
    return h2_answer_view(case, ex, i, ex.streams.get(i)), h2_record_view(case, i, side.records.get(i))


def end_view(exchange: H2Exchange) -> str:
    return exchange.end


def compare(case: H2Case, veter: H2Side, peer: H2Side) -> list[tuple[str, str | None, str]]:
    """Each stream whose views differ, then the end state if it differs, as
    ("allowed" | "known" | "mismatch", the rule, the detail); empty: the same."""
    verdicts = []
    at = [i for i in range(len(case.requests)) if views(case, veter, i) != views(case, peer, i)]
    if end_view(veter.exchange) != end_view(peer.exchange):
        at.append(len(case.requests))
    for i in at:
        ctx = H2Context(case, i, veter, peer)
        detail = _diff(case, i, veter, peer)
        bug = h2_known_bug(ctx)
        rule = h2_allowed(ctx)
        if rule:
            verdicts.append(("allowed", rule, detail))
        elif bug:
            verdicts.append(("known", bug, detail))
        else:
            verdicts.append(("mismatch", None, detail))
    return verdicts


def _show(view: object) -> str:
    return json.dumps(view, sort_keys=True, default=str)


def _diff(case: H2Case, i: int, veter: H2Side, peer: H2Side) -> str:
    lines = []
    if i < len(case.requests):
        (va, vr), (pa, pr) = views(case, veter, i), views(case, peer, i)
        lines.append(f"request {i} (stream {case.stream_id(i)}), what the client got:")
        lines.append(f"  {veter.server}: {_show(va)}")
        lines.append(f"  {peer.server}: {_show(pa)}")
        lines.append(f"request {i}, what the app received:")
        lines.append(f"  {veter.server}: {_show(vr)}")
        lines.append(f"  {peer.server}: {_show(pr)}")
    lines.append(
        f"end: {veter.server}: {veter.exchange.end} (GOAWAY last stream {veter.exchange.goaway_last}); "
        f"{peer.server}: {peer.exchange.end} (GOAWAY last stream {peer.exchange.goaway_last})"
    )
    return "\n".join(lines)


def own_faults(case: H2Case, side: H2Side) -> list[str]:
    """What is wrong with one server's handling whatever its peer did."""
    faults = []
    if side.running:
        faults.append(f"app calls still running after the client was done: {side.running}")
    faults += [f"connection: {d}" for d in side.exchange.defects]
    for i, result in sorted(side.exchange.streams.items()):
        if result.defect:
            faults.append(f"stream {case.stream_id(i)}: {result.defect}")
    for i, request in enumerate(case.requests):
        record = side.records.get(i) or {}
        events = record.get("events", [])
        if request.malformed and request.malformed not in BODY_MALFORMED and record:
            faults.append(f"request {i} is malformed ({request.malformed}) but the app was called")
        if (request.malformed or request.reset_after is not None) and "end" in events:
            faults.append(
                f"request {i} ({request.malformed or 'reset by the client'}) but its app saw the body's end"
            )
        if "timeout" in events or record.get("after") == "timeout":
            faults.append(f"request {i}: the app's receive() waited out its timeout")
        if request.malformed and request.malformed not in BODY_MALFORMED:
            result = side.exchange.streams.get(i)
            if (
                not (result and result.reset == "PROTOCOL_ERROR")
                and side.exchange.end != "goaway:PROTOCOL_ERROR"
            ):
                faults.append(f"request {i} is malformed ({request.malformed}) but its stream was not reset")
    if side.exchange.end == "timeout":
        faults.append("the client waited out its timeout (a hang)")
    return faults


def _shown(case: H2Case) -> str:
    data = case.payload()
    if len(data) <= SHOWN_BYTES:
        return repr(data)
    return f"{data[: SHOWN_BYTES // 2]!r} ... ({len(data)} bytes)"


def _failure(case: H2Case, what: str, detail: str) -> str:
    return (
        f"FAILED HTTP/2 seed {case.seed} case {case.index}: {what}\n"
        f"replay: VETER_FUZZ_SEED={case.seed} VETER_FUZZ_CASE={case.index} python -m tests.hosted.fuzz --http2\n"
        f"{case.describe()}\nbytes: {_shown(case)}\n{detail}"
    )


def run_case(case: H2Case, servers: dict[str, Server], report: Report) -> None:
    report.cases[case.seed] += 1
    veter = observe(servers[VETER["asgi"].name], case)
    peer = observe(servers[H2_PEER.name], case)
    faults = own_faults(case, veter)
    if faults:
        report.failures.append(_failure(case, f"{veter.server} on its own", "\n".join(faults)))
    for fault in own_faults(case, peer):
        report.peer_faults[f"{peer.server}: {re.sub(r'[0-9]+', 'N', fault)[:90]}"] += 1
    verdicts = compare(case, veter, peer)
    if not verdicts:
        report.same += 1
    for outcome, rule, detail in verdicts:
        if outcome == "allowed":
            assert rule is not None
            report.allowed[rule] += 1
        elif outcome == "known":
            assert rule is not None
            report.known[rule] += 1
        else:
            report.failures.append(_failure(case, f"{veter.server} vs {peer.server}", detail))
    for server in servers.values():
        if not server.alive():
            raise RuntimeError(f"{server.spec.name} died:\n{server.proc.output()}")
    if peer.running:
        # Calls that never end would make every later fence wait its whole time.
        servers[H2_PEER.name].close()
        servers[H2_PEER.name] = fresh = Server(H2_PEER)
        fresh.wait_ready()


def run_h2(
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
        for case in generate_h2(seed):
            if only_case is not None and case.index < only_case:
                continue
            run_case(case, servers, report)
            if only_case is not None or time.monotonic() > deadline or len(report.failures) >= max_failures:
                break
    return report
