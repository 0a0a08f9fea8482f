"""The young generation's threshold, set after each young collection from what survived it.

A young collection walks every tracked object made since the last one, net of those
freed: the garbage (objects in cycles) and the survivors (what requests in flight still
hold). Garbage is walked once whatever the threshold; survivors are walked for nothing
and promoted. So the threshold need only stay well above what survives: a few times
the survivors keeps the wasted walk a small part of each collection, and anything
higher only makes each pause longer. An app that leaves cycles behind every request
(Flask) and holds little between requests gets Python's own short collections; 1,600
HTTP/2 streams in flight, holding ~10,000 objects, get a threshold above them
(docs/design.md, "The collector").
"""

from __future__ import annotations

import gc
from typing import Any

#: The threshold is this many times what survived the last young collection.
FACTOR = 4


class YoungThreshold:
    """Keeps ``gc``'s first threshold at ``FACTOR`` x the survivors of the last young
    collection, between ``floor`` and ``ceiling``; ``adaptive=False`` holds it at
    ``ceiling``. ``install`` and ``uninstall`` own the process's collector while
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
        # objects with their own: only a young collection says what survived it.
        if info["generation"] != 0:
            return
        if phase == "start":
            self._made = gc.get_count()[0]
            return
        survivors = self._made - info["collected"]
        wanted = min(max(FACTOR * survivors, self.floor), self.ceiling)
        current = gc.get_threshold()
        if wanted != current[0]:
            gc.set_threshold(wanted, current[1], current[2])
