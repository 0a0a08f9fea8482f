"""The corpus itself: well-formed, big enough, and covering every security rule."""

from __future__ import annotations

from collections import Counter

from .cases import LIMITS, SECURITY_RULES, TOPICS, Incomplete, Reject, Request, load


def test_corpus_has_at_least_300_cases() -> None:
    assert len(load()) >= 300


def test_every_security_rule_has_a_case() -> None:
    used = Counter(rule for case in load() for rule in case.rules)
    missing = [rule for rule in SECURITY_RULES if used[rule] == 0]
    assert missing == [], f"security rules without a corpus case: {missing}"


def test_cases_use_known_rules_and_limits() -> None:
    for case in load():
        unknown = set(case.rules) - set(SECURITY_RULES) - TOPICS
        assert not unknown, f"{case.name}: unknown rules {unknown}"
        assert set(case.limits) <= LIMITS, f"{case.name}: unknown limits {set(case.limits) - LIMITS}"
        assert case.title and case.rules and case.expect, case.name


def test_a_rejection_or_an_incomplete_request_is_always_last() -> None:
    for case in load():
        *before, last = case.expect
        assert all(isinstance(o, Request) for o in before), case.name
        if isinstance(last, Request):
            assert last.version in ("1.0", "1.1"), case.name
        else:
            assert isinstance(last, Reject | Incomplete), case.name
        if isinstance(last, Reject):
            assert last.status in (400, 413, 414, 431, 501, 505), case.name
        for request in before:
            assert request.keep_alive, f"{case.name}: nothing follows a request that closes"
