"""Live state of ClusterQueues and Cohorts: spec, quota node, pending queue, admitted workloads."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from pykueue.engine import model
from pykueue.engine.queues import PendingQueue
from pykueue.engine.quota import FR, QuotaNode, canonical_fr
from pykueue.engine.workload import Stamps, WorkloadInfo


def victim_order(info: WorkloadInfo) -> tuple:
    """Preemption-candidate order within one queue: lower priority, then the most recently
    admitted, then the newest, then the last in the input."""
    return (info.priority, -(info.reserved_us or 0), -info.order_us, -info.seq)


def quotas_of(groups: tuple[model.ResourceGroup, ...]) -> dict[FR, model.ResourceQuota]:
    return {
        canonical_fr(fq.name, res): q
        for group in groups
        for fq in group.flavors
        for res, q in fq.resources.items()
    }


class ClusterQueueState:
    __slots__ = ("spec", "name", "node", "pending", "admitted", "stopping", "by_victim_order", "group_of",
                 "inactive_reason", "flavor_names", "held", "frs")

    def __init__(self, spec: model.ClusterQueue, stamps: Stamps) -> None:
        self.spec = spec
        # A plain attribute (a property was millions of calls in a preemption search); a queue's spec
        # may change, never its name.
        self.name = spec.name
        self.node = QuotaNode(spec.name, is_cohort=False)
        self.pending = PendingQueue(spec.queueing_strategy, stamps)
        self.admitted: dict[str, WorkloadInfo] = {}  # holding quota (QuotaReserved or Admitted)
        # Evicted or deleted, their jobs still stopping: their usage still counts, they are no candidates.
        self.stopping: dict[str, WorkloadInfo] = {}
        # The same workloads in preemption-candidate order (lowest priority, then most recently
        # admitted, first), so a preemption search can merge queues lazily instead of sorting all.
        self.by_victim_order: list[tuple[tuple, WorkloadInfo]] = []
        self.group_of: dict[str, int] = {}
        self.inactive_reason: str | None = None
        self.flavor_names: set[str] = set()
        self.frs: dict[str, dict[str, FR]] = {}  # flavor -> resource -> the pair's canonical key
        # Why it admits nothing whatever its spec says, (reason, detail): terminating, missing from the
        # API with workloads still holding quota in it, or an invalid spec. Its admitted workloads
        # still count, in its cohort too, until they release their quota.
        self.held: tuple[str, str] | None = None
        self.set_spec(spec)

    @property
    def active(self) -> bool:
        return self.inactive_reason is None

    @property
    def in_use(self) -> bool:
        """Some workload's usage counts here (a reservation, or a job still stopping)."""
        return bool(self.admitted) or bool(self.stopping)

    def add_admitted(self, info: WorkloadInfo) -> None:
        self.admitted[info.key] = info
        bisect.insort(self.by_victim_order, (victim_order(info), info), key=lambda e: e[0])

    def remove_admitted(self, info: WorkloadInfo) -> None:
        del self.admitted[info.key]
        order = victim_order(info)
        entries = self.by_victim_order
        i = bisect.bisect_left(entries, order, key=lambda e: e[0])
        while entries[i][1] is not info:
            i += 1
        del entries[i]

    def set_spec(self, spec: model.ClusterQueue) -> None:
        self.spec = spec
        self.node.quotas = quotas_of(spec.resource_groups)
        self.frs = {}
        for fr in self.node.quotas:
            self.frs.setdefault(fr[0], {})[fr[1]] = fr
        self.group_of = {
            res: idx for idx, group in enumerate(spec.resource_groups) for res in group.covered_resources
        }
        self.flavor_names = {fq.name for g in spec.resource_groups for fq in g.flavors}
        self.pending.strategy = spec.queueing_strategy


class CohortState:
    __slots__ = ("spec", "node", "explicit")

    def __init__(self, name: str) -> None:
        self.spec = model.Cohort(name=name)
        self.node = QuotaNode(name, is_cohort=True)
        self.explicit = False  # declared by a Cohort object, not only named by a ClusterQueue

    def set_spec(self, spec: model.Cohort) -> None:
        self.spec = spec
        self.node.quotas = quotas_of(spec.resource_groups)
        self.explicit = True


@dataclass(slots=True, frozen=True)
class ClusterState:
    """The part of the engine a preemption policy reads: queues, cohorts and the configuration (the
    dicts are the engine's own, so the state is always current)."""

    cqs: dict[str, ClusterQueueState]
    cohorts: dict[str, CohortState]
    config: model.Config
