"""veter against h11 on every corpus case: the same verdicts and parsed fields,
except where strictness.py says veter is stricter (it never is more lenient)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cases import Case, Incomplete, Outcome, Reject, Request, load
from .h11_driver import h11_outcomes, same_request
from .strictness import DIFFERENT, STRICTER

DOCS = Path(__file__).parents[2] / "docs" / "security.md"

# h11 has no limits of its own to set, so cases that lower veter's are left out.
CASES = [c for c in load() if not c.limits]


def first_difference(veter: list[Outcome], oracle: list[Outcome]) -> int | None:
    for i, (a, b) in enumerate(zip(veter, oracle, strict=False)):
        if type(a) is not type(b):
            return i
        if isinstance(a, Request) and isinstance(b, Request) and not same_request(a, b):
            return i
    return None if len(veter) == len(oracle) else min(len(veter), len(oracle))


def check_http10_keep_alive(veter: list[Outcome], oracle: list[Outcome]) -> None:
    """Both read the same requests up to an HTTP/1.0 keep-alive one, which veter
    keeps the connection open after and h11 closes after."""
    assert len(oracle) <= len(veter)
    for mine, theirs in zip(veter, oracle, strict=False):
        assert isinstance(mine, Request) and isinstance(theirs, Request)
        assert same_request(mine, theirs)
        if mine.keep_alive != theirs.keep_alive:
            assert mine.version == "1.0" and mine.keep_alive and not theirs.keep_alive
            assert theirs is oracle[-1]
            return
    raise AssertionError("no HTTP/1.0 keep-alive difference: the h11 entry is stale")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_against_h11(case: Case) -> None:
    oracle = h11_outcomes(case.raw)
    veter = case.expect
    at = first_difference(veter, oracle)
    if case.h11 in DIFFERENT:
        assert case.h11 == "http10-keep-alive"
        check_http10_keep_alive(veter, oracle)
        return
    assert at is not None or case.h11 is None, f"h11 agrees: the h11 entry {case.h11!r} is stale"
    if at is None:
        for mine, theirs in zip(veter, oracle, strict=True):
            if isinstance(mine, Request) and isinstance(theirs, Request):
                assert mine.keep_alive == theirs.keep_alive, mine
        return
    assert case.h11 is not None, f"h11 differs at outcome {at}: veter {veter}, h11 {oracle}"
    assert case.h11 in STRICTER, f"unknown h11 entry {case.h11!r}"
    # Stricter, never more lenient: where they part, veter refuses and h11 does not.
    assert isinstance(veter[at], Reject), f"veter {veter[at]} where h11 says {oracle[at:]}"
    assert at >= len(oracle) or isinstance(oracle[at], Request | Incomplete), oracle


def test_every_entry_is_written_down_with_its_reason() -> None:
    text = DOCS.read_text()
    for entry in (*STRICTER, *DIFFERENT):
        assert f"`{entry}`" in text, f"docs/security.md does not list {entry!r}"


def test_every_entry_has_a_corpus_case() -> None:
    used = {c.h11 for c in load()}
    assert set(STRICTER) | set(DIFFERENT) <= used
