"""Deadlines of Kueue's own timed policies, per workload: the engine's one clock-free alarm list.

The engine reads no clock: a driver asks ``Engine.next_wakeup()`` when to call ``schedule(now)`` next,
and the engine fires whatever fell due. Each workload has at most one deadline of each kind; arming a
kind again or cancelling it leaves the old heap entry behind, skipped when it surfaces (cheaper than
removing it from the middle of the heap).
"""

from __future__ import annotations

import heapq
import itertools
from enum import StrEnum


class Deadline(StrEnum):
    """What falls due: the pods of an admitted workload must be ready (waitForPodsReady's timeout, or
    its recoveryTimeout once they stopped being ready), or its admitted time reaches
    ``spec.maximumExecutionTimeSeconds``."""

    PODS_READY = "PodsReady"
    MAX_EXECUTION = "MaximumExecutionTime"


_EVERY_DEADLINE = tuple(Deadline)  # iterating the enum itself builds a list each time


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str, Deadline]] = []
        self._due: dict[tuple[str, Deadline], int] = {}
        self._seq = itertools.count()

    def arm(self, key: str, kind: Deadline, due_us: int) -> None:
        self._due[(key, kind)] = due_us
        heapq.heappush(self._heap, (due_us, next(self._seq), key, kind))

    def cancel(self, key: str, kind: Deadline | None = None) -> None:
        due = self._due
        if not due:
            return  # no deadline armed at all (no pods-ready timeout, no execution limit): the usual case
        for k in (kind,) if kind is not None else _EVERY_DEADLINE:
            due.pop((key, k), None)

    def due_of(self, key: str, kind: Deadline) -> int | None:
        return self._due.get((key, kind))

    def has(self, key: str) -> bool:
        return any((key, k) in self._due for k in _EVERY_DEADLINE)

    def next_due(self) -> int | None:
        heap = self._heap
        while heap and self._due.get((heap[0][2], heap[0][3])) != heap[0][0]:
            heapq.heappop(heap)  # re-armed or cancelled since
        return heap[0][0] if heap else None

    def pop_due(self, now_us: int) -> list[tuple[str, Deadline]]:
        """Every deadline at or before ``now_us``, earliest first (ties: the order they were armed)."""
        out: list[tuple[str, Deadline]] = []
        while (due := self.next_due()) is not None and due <= now_us:
            _, _, key, kind = heapq.heappop(self._heap)
            del self._due[(key, kind)]
            out.append((key, kind))
        return out
