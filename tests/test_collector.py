"""The young generation's threshold is sized from the garbage each young collection finds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from veter.collector import GARBAGE_PER_COLLECTION, YoungThreshold


class _Node:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def young() -> Iterator[list[YoungThreshold]]:
    """Installed thresholds, uninstalled after the test; the collector as it was."""
    before = gc.get_threshold()
    gc.collect()
    installed: list[YoungThreshold] = []
    yield installed
    for each in installed:
        each.uninstall()
    assert gc.get_threshold() == before


def _garbage(count: int) -> None:
    """Make ``count`` objects that die in cycles (only a collection frees them)."""
    for _ in range(count):
        _Node()


def _install(installed: list[YoungThreshold], ceiling: int, **kwargs: object) -> YoungThreshold:
    threshold = YoungThreshold(ceiling, **kwargs)  # type: ignore[arg-type]
    threshold.install()
    installed.append(threshold)
    return threshold


def test_install_sets_the_ceiling_and_uninstall_restores(young: list[YoungThreshold]) -> None:
    before = gc.get_threshold()
    threshold = _install(young, 50_000)
    assert gc.get_threshold() == (50_000, *before[1:])
    assert threshold._on_collection in gc.callbacks
    threshold.uninstall()
    assert gc.get_threshold() == before
    assert threshold._on_collection not in gc.callbacks
    # Twice is harmless either way.
    threshold.uninstall()
    threshold.install()
    threshold.install()
    assert gc.callbacks.count(threshold._on_collection) == 1


def test_a_collection_of_garbage_sizes_it_to_find_the_set_amount(young: list[YoungThreshold]) -> None:
    _install(young, 50_000, floor=300)
    _garbage(20_000)
    gc.collect(0)
    # Nearly all of the ~20,000 objects made were garbage: the next collection comes
    # once about GARBAGE_PER_COLLECTION have been made.
    assert GARBAGE_PER_COLLECTION <= gc.get_threshold()[0] <= GARBAGE_PER_COLLECTION * 11 // 10


def test_half_garbage_gives_twice_the_set_amount(young: list[YoungThreshold]) -> None:
    _install(young, 50_000, floor=300)
    held = []
    for _ in range(10_000):
        _Node()
        held.append([])
    gc.collect(0)
    assert 2 * GARBAGE_PER_COLLECTION <= gc.get_threshold()[0] <= 2 * GARBAGE_PER_COLLECTION * 11 // 10
    del held


def test_never_below_the_floor(young: list[YoungThreshold]) -> None:
    _install(young, 50_000, floor=3_000)
    _garbage(20_000)
    gc.collect(0)
    assert gc.get_threshold()[0] == 3_000


def test_a_collection_without_garbage_raises_it_to_the_ceiling(young: list[YoungThreshold]) -> None:
    _install(young, 50_000, floor=300)
    _garbage(20_000)
    gc.collect(0)
    assert gc.get_threshold()[0] < 50_000
    # Survivors are bounded by what is in flight, not by the threshold: without
    # garbage, fewer collections walk them and promote them less often.
    held = [[] for _ in range(3_000)]  # type: ignore[var-annotated]
    gc.collect(0)
    assert gc.get_threshold()[0] == 50_000
    del held


def test_little_garbage_stays_under_the_ceiling(young: list[YoungThreshold]) -> None:
    _install(young, 5_000, floor=300)
    held = [[] for _ in range(3_000)]  # type: ignore[var-annotated]
    for _ in range(10):
        _Node()
    gc.collect(0)
    assert gc.get_threshold()[0] == 5_000
    del held


def test_older_collections_leave_it_alone(young: list[YoungThreshold]) -> None:
    # A collection of an older generation takes the young one with it and cannot
    # tell its survivors apart.
    _install(young, 50_000, floor=300)
    _garbage(20_000)
    gc.collect(1)
    gc.collect()
    assert gc.get_threshold()[0] == 50_000


def test_not_adaptive_holds_the_ceiling(young: list[YoungThreshold]) -> None:
    threshold = _install(young, 50_000, adaptive=False, floor=300)
    assert threshold._on_collection not in gc.callbacks
    _garbage(20_000)
    gc.collect(0)
    assert gc.get_threshold()[0] == 50_000


def test_the_floor_is_pythons_own_and_at_most_the_ceiling() -> None:
    assert YoungThreshold(50_000).floor == gc.get_threshold()[0]
    assert YoungThreshold(100).floor == 100


def test_a_ceiling_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        YoungThreshold(0)
