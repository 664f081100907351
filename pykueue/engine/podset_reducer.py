"""Partial admission: the largest pod counts between ``minCount`` and ``count`` that can be admitted.

The shrink budget is spent from the last pod set towards the first; a binary search finds the smallest
budget that fits; then pod sets cut more than needed grow back, first to last (upstream's reducer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pykueue.engine.workload import WorkloadInfo

R = TypeVar("R")


def _distribute(full: list[int], deltas: list[int], amount: int) -> list[int]:
    out = list(full)
    remaining = amount
    for i in range(len(deltas) - 1, -1, -1):
        cut = min(deltas[i], remaining)
        out[i] = full[i] - cut
        remaining -= cut
    return out


def reduce_counts(info: WorkloadInfo, fits: Callable[[list[int]], R | None]) -> R | None:
    full = info.pod_set_counts()
    deltas = [
        max(0, c - ps.min_count) if ps.min_count is not None else 0
        for ps, c in zip(info.spec.pod_sets, full, strict=True)
    ]
    total = sum(deltas)
    if total == 0:
        return None
    lo, hi = 0, total + 1  # smallest budget in [0, total] that fits; total + 1 means none
    best: R | None = None
    best_counts: list[int] | None = None
    while lo < hi:
        mid = (lo + hi) // 2
        counts = _distribute(full, deltas, mid)
        r = fits(counts)
        if r is not None:
            best, best_counts = r, counts
            hi = mid
        else:
            lo = mid + 1
    if lo > total or best_counts is None:
        return None
    return _give_back(full, best_counts, best, fits)


def _give_back(full: list[int], counts: list[int], best: R, fits: Callable[[list[int]], R | None]) -> R:
    if sum(1 for c, f in zip(counts, full, strict=True) if c < f) < 2:
        return best
    trial = list(counts)
    for i in range(len(counts)):
        if counts[i] == full[i]:
            continue
        trial[i] = full[i]
        r = fits(trial)
        if r is not None:
            counts[i], best = full[i], r
            continue
        lo, hi = counts[i] + 1, full[i] - 1
        grown, grown_best = counts[i], best
        while lo <= hi:
            mid = (lo + hi) // 2
            trial[i] = mid
            r = fits(trial)
            if r is not None:
                grown, grown_best = mid, r
                lo = mid + 1
            else:
                hi = mid - 1
        counts[i] = trial[i] = grown
        best = grown_best
    return best
