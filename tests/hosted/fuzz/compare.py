"""Comparing what veter and a peer did with one case: the first request whose
normalised views differ decides (everything after it on that connection follows
from it), then the end state; plus the checks veter must pass on its own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.hosted.fuzz.cases import Case
from tests.hosted.fuzz.rules import Context, Side, allowed, answer_view, end_view, known_bug, record_view


@dataclass
class Verdict:
    outcome: str  # "same", "allowed", "known" (an open bug with its test) or "mismatch"
    rule: str | None = None
    detail: str = ""


def views(case: Case, side: Side, i: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return answer_view(case, i, side.answer(i)), record_view(case, i, side.records.get(i))


def compare(case: Case, veter: Side, peer: Side) -> Verdict:
    count = len(case.requests)
    first = count
    for i in range(count):
        if views(case, veter, i) != views(case, peer, i):
            first = i
            break
    else:
        if end_view(case, veter.exchange) == end_view(case, peer.exchange):
            return Verdict("same")
    ctx = Context(case, first, veter, peer)
    detail = _diff(case, first, veter, peer)
    rule = allowed(ctx)
    if rule:
        return Verdict("allowed", rule, detail)
    bug = known_bug(ctx)
    if bug:
        return Verdict("known", bug, detail)
    return Verdict("mismatch", None, detail)


def _show(view: object) -> str:
    return json.dumps(view, sort_keys=True, default=str)


def _diff(case: Case, i: int, veter: Side, peer: Side) -> str:
    lines = []
    if i < len(case.requests):
        (va, vr), (pa, pr) = views(case, veter, i), views(case, peer, i)
        lines.append(f"request {i}, the answer:")
        lines.append(f"  {veter.server}: {_show(va)}")
        lines.append(f"  {peer.server}: {_show(pa)}")
        lines.append(f"request {i}, what the app received:")
        lines.append(f"  {veter.server}: {_show(vr)}")
        lines.append(f"  {peer.server}: {_show(pr)}")
    lines.append(
        f"answers / end: {veter.server}: {len(veter.exchange.answers)} / {veter.exchange.end}; "
        f"{peer.server}: {len(peer.exchange.answers)} / {peer.exchange.end}"
    )
    return "\n".join(lines)


def own_faults(case: Case, side: Side) -> list[str]:
    """What is wrong with one server's handling whatever its peer did."""
    faults = []
    if side.running:
        faults.append(f"app calls still running after the client was done: {side.running}")
    for i, answer in enumerate(side.exchange.answers):
        if answer.defect:
            faults.append(f"answer {i}: {answer.defect}")
    for i, request in enumerate(case.requests):
        record = side.records.get(i) or {}
        if request.malformed and "end" in record.get("events", []):
            faults.append(f"request {i} is malformed ({request.malformed}) but its app saw the body's end")
        if "timeout" in record.get("events", []) or record.get("after") == "timeout":
            faults.append(f"request {i}: the app's receive() or read waited out its timeout")
    if side.exchange.end == "timeout":
        faults.append("the client waited out its timeout (a hang)")
    return faults
