"""Preemption: which admitted workloads to evict so that a pending one fits.

``Preemptor`` is the front the scheduler and the flavor assigner talk to: it picks the policy
(``classical``, or ``fairsharing`` when fair sharing is enabled), remembers the answers given while one
workload is nominated, and answers the flavor assigner's oracle. What both policies share (targets,
the search loop, quota what-ifs that always restore the tree) is in ``common``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pykueue.engine.flavors import G_NO_CANDIDATES, G_PREEMPT, G_RECLAIM
from pykueue.engine.preemption.classical import ClassicalPolicy
from pykueue.engine.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ClusterState,
    Target,
    add_workload_usage,
    fits,
    remove_workload_usage,
    with_usage,
    without,
)
from pykueue.engine.preemption.fairsharing import FairSharingPolicy
from pykueue.engine.quota import FR, lowest_subtree_that_fits
from pykueue.engine.workload import WorkloadInfo

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterQueueState

__all__ = [
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "ClusterState",
    "Preemptor",
    "Target",
    "add_workload_usage",
    "fits",
    "remove_workload_usage",
    "with_usage",
    "without",
]


class Preemptor:
    """The preemption policy of one engine, chosen by its configuration."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.classical = ClassicalPolicy(state.cqs)
        self.policy: ClassicalPolicy | FairSharingPolicy = (
            FairSharingPolicy(state) if state.config.fair_sharing.enable else self.classical
        )
        # Targets found while nominating one workload: the oracle and the final search often ask the
        # same question, and nothing changes the quota tree in between. Set to {} and back to None
        # around each nomination by ``Scheduler.assignments``; None outside.
        self.memo: dict[tuple, list[Target]] | None = None

    @contextmanager
    def nominating_heads(self) -> Iterator[None]:
        """While the scheduler nominates a cycle's heads no usage changes: the classical policy may
        share its walks of the cohorts between them."""
        self.classical.merged_cache = {}
        self.classical.prefix_cache = {}
        try:
            yield
        finally:
            self.classical.merged_cache = None
            self.classical.prefix_cache = None

    def targets(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR]) -> list[Target]:
        memo = self.memo
        if memo is None:
            return self.policy.targets(cq, wl, requests, frs)
        key = (cq.name, wl.key, tuple(sorted(requests.items())), tuple(sorted(frs)))
        found = memo.get(key)
        if found is None:
            found = memo[key] = self.policy.targets(cq, wl, requests, frs)
        return list(found)

    def oracle(self, cq: ClusterQueueState, wl: WorkloadInfo, fr: FR, quantity: int) -> tuple[int, int]:
        """Could preempting free ``quantity`` of ``fr``? (granular mode, borrowing level afterwards)."""
        chosen = self.targets(cq, wl, {fr: quantity}, {fr})
        if not chosen:
            return G_NO_CANDIDATES, 0
        with without(self.state.cqs, [t.workload for t in chosen]):
            borrow, _ = lowest_subtree_that_fits(cq.node, fr, quantity)
        if any(t.workload.cluster_queue == cq.name for t in chosen):
            return G_PREEMPT, borrow
        return G_RECLAIM, borrow
