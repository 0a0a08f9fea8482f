"""The young generation's threshold, set after each young collection from the garbage it found.

A young collection walks every tracked object made since the last one: the garbage
(objects in cycles) and the survivors (what requests in flight still hold). How many
survive is bounded by what is in flight, whatever the threshold, so for an app that
leaves no cycles a higher threshold only means fewer collections, and fewer requests
in flight promoted to the older generations, whose collections are the long ones.
Garbage is the other way round: it grows with the threshold, and an app that leaves
cycles behind every request (Flask) at 20,000 walks ~20,000 dead objects in one pause.
So the threshold is sized for each young collection to find about
``GARBAGE_PER_COLLECTION`` dead objects, between Python's own and the ceiling
(docs/design.md, "The collector").
"""

from __future__ import annotations

import gc
from typing import Any

#: Dead objects a young collection is sized to find (Python 3.11's own 700 collects about
#: as many from an app that leaves cycles every request): a pause of ~0.1 ms.
GARBAGE_PER_COLLECTION = 500


class YoungThreshold:
    """Keeps ``gc``'s first threshold where the last young collection would have found
    ``GARBAGE_PER_COLLECTION`` dead objects, between ``floor`` and ``ceiling``;
    ``adaptive=False`` holds it at ``ceiling``. ``install`` and ``uninstall`` own the process's collector while
    installed (a worker; a server embedded in a larger program leaves it alone)."""

    __slots__ = ("_before", "_made", "adaptive", "ceiling", "floor")

    def __init__(self, ceiling: int, *, adaptive: bool = True, floor: int | None = None) -> None:
        if ceiling < 1:
            raise ValueError(f"the young threshold's ceiling must be at least 1, not {ceiling}")
        self.ceiling = ceiling
        # Never more often than Python's own threshold would collect.
        self.floor = min(gc.get_threshold()[0] if floor is None else floor, ceiling)
        self.adaptive = adaptive
        #: The thresholds before ``install`` (restored by ``uninstall``).
        self._before: tuple[int, int, int] | None = None
        #: Tracked objects made (net) when the running young collection started.
        self._made = 0

    def install(self) -> None:
        if self._before is not None:
            return
        self._before = gc.get_threshold()
        # The first collection comes at the ceiling; from then on it follows the survivors.
        gc.set_threshold(self.ceiling, *self._before[1:])
        if self.adaptive:
            gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._before is None:
            return
        if self.adaptive:
            gc.callbacks.remove(self._on_collection)
        gc.set_threshold(*self._before)
        self._before = None

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        # Older generations' collections take the young one with them and count its
        # garbage with their own: only a young collection says what it found.
        if info["generation"] != 0:
            return
        if phase == "start":
            self._made = gc.get_count()[0]
            return
        # The garbage found is the share of what was made that died in cycles.
        found = info["collected"]
        wanted = self.ceiling if found <= 0 else self._made * GARBAGE_PER_COLLECTION // found
        wanted = min(max(wanted, self.floor), self.ceiling)
        current = gc.get_threshold()
        if wanted != current[0]:
            gc.set_threshold(wanted, current[1], current[2])
