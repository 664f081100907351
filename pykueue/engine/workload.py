"""A workload as the engine tracks it while it queues, holds quota, runs and finishes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator
from enum import StrEnum
from typing import Any, TypeVar

from pykueue.engine import model
from pykueue.engine.model import seconds_to_us
from pykueue.engine.quota import FR, canonical_fr

Stamps = Iterator[int]  # one per engine: tells which of two reasons (a workload's, its class's) was set last


def new_stamps() -> Stamps:
    return itertools.count(1)


class State(StrEnum):
    PENDING = "Pending"
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    INACTIVE = "Inactive"
    # Evicted or being deleted, its job still stopping: it holds its quota without running and is no
    # preemption candidate. Only a driver whose jobs take time to stop sees it (the controller); the
    # simulator's jobs stop at the decision.
    STOPPING = "Stopping"


# QuotaReserved=False reasons (upstream's granular ones).
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
PENDING_EVALUATION = "PendingEvaluation"
ON_HOLD = "OnHold"  # held by its job (upstream's WorkloadOnHold): pending, never queued, until let go
WAITING_FOR_PODS_READY = "WaitingForPodsReady"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
DEACTIVATED = "Deactivated"


_V = TypeVar("_V", bound=Hashable)
_T = TypeVar("_T")


class Shared:
    """One stored copy of equal immutable values (scheduling hashes, LocalQueue keys, admissions):
    a trace of a million workloads has a few hundred distinct ones of each. Only a cache of the
    sharing: emptied when it grows past ``limit`` (a controller sees shapes come and go for weeks)."""

    __slots__ = ("_table", "_by_id", "limit")

    def __init__(self, limit: int = 1 << 16) -> None:
        self._table: dict = {}
        self._by_id: dict[int, tuple[object, Any]] = {}
        self.limit = limit

    def __call__(self, value: _V) -> _V:
        return self.by_key(value, lambda: value)

    def by_key(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """The stored value for ``key``, made by ``make`` the first time (for values that cannot be
        hashed themselves, such as an admission with its flavor dicts)."""
        table = self._table
        found = table.get(key)
        if found is not None:
            return found
        if len(table) >= self.limit:
            table.clear()
        value = table[key] = make()
        return value

    def of_object(self, obj: object, make: Callable[[], _T]) -> _T:
        """What ``make`` derives from ``obj``, made once per object (by identity: the loader gives the
        workloads of one spec the same pod-set tuple). The object is held, so its id is not reused."""
        table = self._by_id
        found = table.get(id(obj))
        if found is not None and found[0] is obj:
            return found[1]  # type: ignore[no-any-return]
        if len(table) >= self.limit:
            table.clear()
        value = make()
        table[id(obj)] = (obj, value)
        return value


def scheduling_hash(wl: model.Workload, shared: Shared | None = None) -> tuple:
    """Workloads with equal hashes in one queue get the same answer from the scheduler, so when one does
    not fit, its equals can be set aside without being evaluated one by one. With ``shared``, the pod-set
    part is made once per pod-set tuple."""
    pod_sets = wl.pod_sets
    return (
        wl.namespace,
        wl.queue_name,
        wl.priority,
        _pod_sets_hash(pod_sets) if shared is None else shared.of_object(pod_sets, lambda: _pod_sets_hash(pod_sets)),
        tuple(sorted(wl.reclaimable_pods.items())) if wl.reclaimable_pods else (),
        wl.replaces,  # a scale-up counts its old slice's quota as its own: no other workload's answer
    )


def _pod_sets_hash(pod_sets: tuple[model.PodSet, ...]) -> tuple:
    return tuple([
        (
            ps.name,
            ps.count,
            ps.min_count,
            tuple(sorted(ps.requests.items())),
            tuple(sorted(ps.node_selector.items())),
            ps.required_affinity,
            ps.tolerations,
        )
        for ps in pod_sets
    ])


class WorkloadInfo:
    """Mutable runtime state of one workload. ``spec`` is the submitted object (immutable)."""

    __slots__ = (
        "spec",
        "key",
        "lq_key",
        "seq",
        "cluster_queue",
        "state",
        "admission",
        "usage",
        "order_us",
        "reason",
        "message",
        "reserved_us",
        "admitted_us",
        "finished_us",
        "evictions",
        "evicted_us",
        "eviction_reason",
        "requeue_count",
        "requeue_us",
        "pods_ready",
        "accumulated_s",
        "deactivated_by",
        "check_states",
        "hash",
        "reason_stamp",
        "watch",
        "known",
        "stamps",
        "held",
    )

    def __init__(self, spec: model.Workload, seq: int, stamps: Stamps, shared: Shared | None = None) -> None:
        share = shared if shared is not None else _unshared
        self.spec = spec
        self.key = spec.key
        # NAMESPACE/NAME of its LocalQueue (Engine.update_workload moves it with a new queue name).
        self.lq_key = share(f"{spec.namespace}/{spec.queue_name}")
        self.seq = seq  # document order: the final tie-breaker everywhere
        self.cluster_queue: str | None = None  # resolved through the LocalQueue
        self.state = State.PENDING if spec.active else State.INACTIVE
        self.admission: model.Admission | None = None
        self.usage: dict[FR, int] = model.nothing()  # replaced whole when it holds quota
        # Times are integer microseconds (model.US); order_us is the queue-order timestamp: creation,
        # or eviction for some evictions.
        self.order_us = seconds_to_us(spec.creation_time)
        self.reason: str | None = PENDING_EVALUATION if spec.active else DEACTIVATED
        self.held = spec.on_hold  # its job holds it (Engine.hold): pending, kept out of every queue
        self.message = ""
        self.reserved_us: int | None = None
        self.admitted_us: int | None = None
        self.finished_us: int | None = None
        self.evictions = 0
        self.evicted_us: int | None = None
        self.eviction_reason: str | None = None
        self.requeue_count = 0
        self.requeue_us: int | None = None  # when its requeuing backoff expires
        self.pods_ready = False
        self.accumulated_s = spec.accumulated_execution_seconds  # admitted seconds of past admissions
        self.deactivated_by: str | None = None  # why Kueue itself deactivated it (a cause), until reactivated
        self.check_states: dict[str, str] = model.nothing()  # replaced whole at each reservation
        self.hash = share(scheduling_hash(spec, shared))
        self.reason_stamp = 0
        self.stamps = stamps
        # The engine's set of workloads whose reason may have changed, when a driver records reasons over
        # time (Engine.watch_reasons); None otherwise, and then this costs nothing.
        self.watch: set[WorkloadInfo] | None = None
        # In its engine's table of workloads (set and cleared by the engine as it adds and deletes it):
        # counted in its LocalQueue's columns. A flag, not a lookup in a table of a million.
        self.known = False

    def set_reason(self, reason: str | None, message: str = "") -> None:
        self.reason = reason
        self.message = message
        self.reason_stamp = next(self.stamps)
        if self.watch is not None:
            self.watch.add(self)

    @property
    def admitted_at(self) -> float | None:
        """The last admission time in seconds, for result documents (compare ``admitted_us``)."""
        return None if self.admitted_us is None else self.admitted_us / model.US

    @property
    def finished_at(self) -> float | None:
        """The finish time in seconds, for result documents (compare ``finished_us``)."""
        return None if self.finished_us is None else self.finished_us / model.US

    @property
    def requeue_at(self) -> float | None:
        """When its requeuing backoff expires, in seconds, for status writers (compare ``requeue_us``)."""
        return None if self.requeue_us is None else self.requeue_us / model.US

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def has_quota(self) -> bool:
        """Holds a reservation that runs (or waits for its checks): evictable, a preemption candidate."""
        return self.state in (State.QUOTA_RESERVED, State.ADMITTED)

    @property
    def holds_usage(self) -> bool:
        """Its usage counts in its ClusterQueue: a reservation, or one whose job is still stopping."""
        return self.state in (State.QUOTA_RESERVED, State.ADMITTED, State.STOPPING)

    def pod_set_counts(self) -> list[int]:
        """Pod counts that need quota: the spec counts less the reclaimable pods."""
        rec = self.spec.reclaimable_pods
        return [max(0, ps.count - rec.get(ps.name, 0)) for ps in self.spec.pod_sets]

    def __repr__(self) -> str:
        return f"WorkloadInfo({self.key}, {self.state.value})"


def usage_of(wl: model.Workload, admission: model.Admission) -> dict[FR, int]:
    """Quota an admission charges: per pod set, admitted count (at most its count now, less reclaimable pods) times each
    per-pod request, on the flavor assigned to that resource; ``pods`` counts pods."""
    usage: dict[FR, int] = {}
    by_name = {ps.name: ps for ps in wl.pod_sets}
    for psa in admission.pod_set_assignments:
        ps = by_name.get(psa.name)
        if ps is None:
            continue
        # at most the pod set's count: an elastic workload scaled down in place keeps its admission
        count = max(0, min(psa.count, ps.count) - wl.reclaimable_pods.get(ps.name, 0))
        for res, flavor in psa.flavors.items():
            per_pod = count if res == model.PODS else ps.requests.get(res, 0) * count
            if per_pod:
                fr = canonical_fr(flavor, res)
                usage[fr] = usage.get(fr, 0) + per_pod
    return usage


def _unshared(value: _V) -> _V:
    return value
