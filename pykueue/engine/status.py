"""The engine's read model: snapshots of a workload, a ClusterQueue and a Cohort.

Drivers (the simulator, its result writer and report, ``explain``, the controller's status writers)
read the engine only through these, never through its live structures, so those can change shape
without touching any driver. Snapshots are cheap (plain field copies) and never change afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pykueue.engine import model
from pykueue.engine.quota import FR
from pykueue.engine.workload import State


@dataclass(slots=True, init=False)
class WorkloadStatus:
    """Not frozen, its ``__init__`` written out: the engine makes one per workload each time a driver
    reads it, and a frozen dataclass sets each of its fields through ``object.__setattr__``, in an
    ``__init__`` that stays interpreted even in a compiled build. Nothing changes one once made."""

    key: str
    spec: model.Workload  # the submitted workload (as last changed)
    state: State
    cluster_queue: str | None  # where it holds quota, else where its LocalQueue points
    admission: model.Admission | None  # current; for a Finished workload, the one it finished under
    usage: Mapping[FR, int]
    reason: str | None  # of its QuotaReserved=False condition; None while it holds quota
    message: str | None
    order_us: int  # queue-order time: creation, or eviction for some evictions
    reserved_us: int | None
    admitted_us: int | None  # the last admission
    finished_us: int | None
    evictions: int
    eviction_reason: str | None
    requeue_count: int
    requeue_us: int | None  # when its requeuing backoff expires
    pods_ready: bool
    accumulated_s: int  # status.accumulatedPastExecutionTimeSeconds
    deactivated_by: str | None  # the cause when Kueue itself deactivated it (not the user)
    check_states: Mapping[str, str]
    seq: int  # submission order: the final tie-breaker

    def __init__(self, *, key: str, spec: model.Workload, state: State, cluster_queue: str | None,
                 admission: model.Admission | None, usage: Mapping[FR, int], reason: str | None,
                 message: str | None, order_us: int, reserved_us: int | None, admitted_us: int | None,
                 finished_us: int | None, evictions: int, eviction_reason: str | None, requeue_count: int,
                 requeue_us: int | None, pods_ready: bool, accumulated_s: int, deactivated_by: str | None,
                 check_states: Mapping[str, str], seq: int) -> None:
        self.key, self.spec, self.state, self.cluster_queue = key, spec, state, cluster_queue
        self.admission, self.usage, self.reason, self.message = admission, usage, reason, message
        self.order_us, self.reserved_us, self.admitted_us = order_us, reserved_us, admitted_us
        self.finished_us, self.evictions, self.eviction_reason = finished_us, evictions, eviction_reason
        self.requeue_count, self.requeue_us, self.pods_ready = requeue_count, requeue_us, pods_ready
        self.accumulated_s, self.deactivated_by = accumulated_s, deactivated_by
        self.check_states, self.seq = check_states, seq

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def holds_quota(self) -> bool:
        return self.state in (State.QUOTA_RESERVED, State.ADMITTED)


@dataclass(slots=True, frozen=True)
class ClusterQueueStatus:
    name: str
    spec: model.ClusterQueue
    cohort: str | None
    pending: int
    reserving: int  # holding quota: QuotaReserved or Admitted
    admitted: int
    usage: Mapping[FR, int]  # non-zero usage only
    quotas: Mapping[FR, model.ResourceQuota]
    inactive_reason: str | None  # None when active
    inactive_message: str | None
    weighted_share: int  # status.fairSharing.weightedShare; 0 without fair sharing
    pending_inadmissible: int = 0  # of ``pending``: set aside until capacity changes
    in_use: Mapping[FR, int] = field(default_factory=dict)  # usage of the Admitted workloads only (``usage`` adds QuotaReserved)
    missing_flavors: tuple[str, ...] = ()  # referenced ResourceFlavors that do not exist, in spec order
    missing_checks: tuple[str, ...] = ()  # referenced AdmissionChecks that do not exist, by name
    # what its pending workloads (queued or set aside) request in all, per resource (never negative)
    pending_requests: Mapping[str, int] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.inactive_reason is None


@dataclass(slots=True, frozen=True)
class LocalQueueStatus:
    key: str  # NAMESPACE/NAME
    spec: model.LocalQueue
    pending: int
    reserving: int
    admitted: int
    cluster_queue_exists: bool
    cluster_queue_active: bool


@dataclass(slots=True, frozen=True)
class CohortStatus:
    name: str
    spec: model.Cohort
    parent: str | None  # as linked (a cohort in a cycle is a root)
    usage: Mapping[FR, int]
    subtree_quota: Mapping[FR, int]
    weighted_share: int = 0  # status.fairSharing.weightedShare; 0 without fair sharing


@dataclass(slots=True, frozen=True)
class QuotaAvailability:
    """One flavor and resource of a ClusterQueue, as a pending workload sees it."""

    nominal: int
    used: int
    available: int  # usable now: own leftovers and what the cohort can lend (negative if over)
    at_most: int  # if nothing else used any
