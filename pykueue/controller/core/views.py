"""What the controller's status writers and metrics read of the engine, from its read model.

The one place in the controller that reads engine state, and it reads only the engine's frozen
snapshots (``pykueue.engine.status``), never its live structures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykueue.controller.core.workload_status import WorkloadView
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.quota import FR
from pykueue.engine.status import ClusterQueueStatus, LocalQueueStatus, WorkloadStatus
from pykueue.engine.workload import State
from pykueue.quantity import format_quantity


def workload(engine: Engine, key: str) -> WorkloadView | None:
    w = engine.workload_status(key)
    if w is None:
        return None
    return WorkloadView(
        state=w.state,
        cluster_queue=w.cluster_queue,
        admission=w.admission,
        reason=w.reason,
        message=w.message or "",
        requeue_count=w.requeue_count,
        requeue_at=None if w.requeue_us is None else w.requeue_us / model.US,
        evictions=w.evictions,
        spec=w.spec,
        check_states=dict(w.check_states),
        accumulated_seconds=w.accumulated_s,
    )


def holds_quota(engine: Engine, key: str) -> bool:
    return engine.state_of(key) in (State.QUOTA_RESERVED, State.ADMITTED)


def holds_usage(engine: Engine, key: str) -> bool:
    """Its usage counts: a reservation, or an evicted one whose job is still stopping."""
    return engine.state_of(key) in (State.QUOTA_RESERVED, State.ADMITTED, State.STOPPING)


def pods_ready(engine: Engine, key: str) -> bool:
    w = engine.workload_status(key)
    return w is not None and w.pods_ready


def admitted_state(engine: Engine, key: str) -> State | None:
    return engine.state_of(key)


def check_states(engine: Engine, key: str) -> dict[str, str]:
    w = engine.workload_status(key)
    return {} if w is None else dict(w.check_states)


def reclaimable_pods(engine: Engine, key: str) -> dict[str, int] | None:
    """The reclaimable pods the engine charges the workload without, None for an unknown workload."""
    w = engine.workload_status(key)
    return None if w is None else dict(w.spec.reclaimable_pods)


def snapshot(engine: Engine, key: str) -> WorkloadStatus | None:
    """The read model's whole snapshot of one workload, for a caller that reads several fields."""
    return engine.workload_status(key)


def pending_condition(engine: Engine, key: str) -> tuple[str | None, str | None] | None:
    """(reason, message) of the QuotaReserved=False condition, without building a snapshot."""
    return engine.pending_condition(key)


def has_own_answer(engine: Engine, key: str) -> bool:
    """The workload's pending condition is its own (see ``Engine.has_own_answer``)."""
    return engine.has_own_answer(key)


def pending_keys(engine: Engine) -> list[str]:
    return engine.workload_keys(State.PENDING)


def cluster_queue_status(engine: Engine, name: str) -> dict[str, Any] | None:
    """`ClusterQueue.status` as upstream reports it: counts, usage per flavor, the Active condition."""
    cq = engine.cluster_queue_status(name)
    if cq is None:
        return None
    flavors: dict[str, list[dict[str, str]]] = {}
    for group in cq.spec.resource_groups:
        for fq in group.flavors:
            rows = flavors.setdefault(fq.name, [])
            for resource, quota in fq.resources.items():
                used = cq.usage.get((fq.name, resource), 0)
                borrowed = max(0, used - quota.nominal)
                rows.append({"name": resource, "total": format_quantity(resource, used),
                             "borrowed": format_quantity(resource, borrowed)})
    for (flavor, resource), used in cq.usage.items():  # held for admitted workloads, outside the spec
        if not any(row["name"] == resource for row in flavors.get(flavor, ())):
            flavors.setdefault(flavor, []).append({"name": resource, "total": format_quantity(resource, used),
                                                   "borrowed": format_quantity(resource, used)})
    usage = [{"name": flavor, "resources": rows} for flavor, rows in flavors.items()]
    reason = cq.inactive_reason
    active = {
        "type": "Active",
        "status": "True" if reason is None else "False",
        "reason": "Ready" if reason is None else reason,
        "message": "Can admit new workloads" if reason is None else _inactive_message(cq, reason),
    }
    status: dict[str, Any] = {
        "pendingWorkloads": cq.pending,
        "reservingWorkloads": cq.reserving,
        "admittedWorkloads": cq.admitted,
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "conditions": [active],
    }
    if engine.config.fair_sharing.enable:
        status["fairSharing"] = {"weightedShare": cq.weighted_share}  # as upstream writes it when enabled
    return status


def _inactive_message(cq: ClusterQueueStatus, reason: str) -> str:
    """Upstream's Active=False message: every problem the queue has, the first one's reason first
    ("Can't admit new workloads: references missing ResourceFlavor(s): a,b.")."""
    if reason == "Terminating":
        return "Can't admit new workloads; clusterQueue is terminating"
    if reason == "InvalidSpec":
        return cq.inactive_message or reason  # what `pykueue validate` says of the object
    parts = []
    if reason == "Stopped":
        parts.append("is stopped")
    if cq.missing_flavors:
        parts.append(f"references missing ResourceFlavor(s): {','.join(cq.missing_flavors)}")
    if cq.missing_checks:
        parts.append(f"references missing AdmissionCheck(s): {','.join(cq.missing_checks)}")
    if reason == "CohortCycle":
        parts.append("its cohort is part of a cycle of Cohort parents")
    return f"Can't admit new workloads: {', '.join(parts or [reason])}."


def cohort_statuses(engine: Engine) -> dict[str, dict[str, Any]]:
    """`Cohort.status` as upstream writes it when fair sharing is on: the cohort's weighted share."""
    if not engine.config.fair_sharing.enable:
        return {}
    out = {}
    for name in engine.cohort_names():
        status = engine.cohort_status(name)
        if status is not None:
            out[name] = {"fairSharing": {"weightedShare": status.weighted_share}}
    return out


def local_queue_active(lq: LocalQueueStatus) -> dict[str, str]:
    """A LocalQueue's Active condition, worded as upstream's LocalQueue reconciler words it."""
    if lq.spec.invalid is not None:
        return _active(False, "InvalidSpec", lq.spec.invalid)
    if lq.spec.stop_policy != model.STOP_NONE:
        return _active(False, "Stopped", "LocalQueue is stopped")
    if not lq.cluster_queue_exists:
        return _active(False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    if not lq.cluster_queue_active:
        return _active(False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    return _active(True, "Ready", "Can submit new workloads to localQueue")


def _active(status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": "Active", "status": "True" if status else "False", "reason": reason, "message": message}


def local_queue_statuses(engine: Engine) -> dict[str, dict[str, Any]]:
    """`LocalQueue.status` per key (NAMESPACE/NAME): pending / reserving / admitted counts and Active."""
    return {
        key: {"pendingWorkloads": lq.pending, "reservingWorkloads": lq.reserving,
              "admittedWorkloads": lq.admitted, "conditions": [local_queue_active(lq)]}
        for key, lq in engine.local_queue_statuses().items()
    }


# ---- what /metrics reports (metrics.py) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueMetrics:
    """One ClusterQueue as upstream's cache and queue manager report it: pending (queued or set aside
    until capacity changes), reserving and admitted counts, quota and usage per (flavor, resource)."""

    name: str
    cohort: str
    active: bool
    pending_active: int
    pending_inadmissible: int
    reserving: int
    admitted: int
    quotas: tuple[tuple[str, str, model.ResourceQuota], ...]
    reserved: dict[FR, int]  # quota held by QuotaReserved and Admitted workloads
    in_use: dict[FR, int]  # quota held by Admitted workloads only
    weighted_share: float  # unrounded; NaN for a queue of weight 0 that borrows
    preemption_skips: int  # heads skipped in the last cycle: their preemption targets were taken
    # what its pending workloads request, per resource: each covered resource (0 when none is pending)
    # and any other one a pending workload asks for (upstream seeds the covered ones with 0)
    pending_requests: dict[str, int]


def queue_metrics(engine: Engine) -> list[QueueMetrics]:
    out = []
    skips = engine.preemption_skips()
    for name in engine.cluster_queue_names():
        cq = engine.cluster_queue_status(name)
        assert cq is not None
        quotas = tuple((fq.name, resource, quota) for group in cq.spec.resource_groups for fq in group.flavors
                       for resource, quota in fq.resources.items())
        out.append(QueueMetrics(
            name=name, cohort=cq.cohort or "", active=cq.active,
            pending_active=cq.pending - cq.pending_inadmissible, pending_inadmissible=cq.pending_inadmissible,
            reserving=cq.reserving, admitted=cq.admitted, quotas=quotas,
            reserved=dict(cq.usage), in_use=dict(cq.in_use),
            weighted_share=engine.precise_weighted_share(name), preemption_skips=skips.get(name, 0),
            pending_requests={**{r: 0 for group in cq.spec.resource_groups for r in group.covered_resources},
                              **cq.pending_requests},
        ))
    return out


@dataclass(frozen=True, slots=True)
class LocalQueueMetrics:
    """One LocalQueue as upstream's queue manager and cache report it. ``flavors`` lists its
    ClusterQueue's (flavor, resource) pairs; empty when that ClusterQueue does not exist, and upstream
    then reports nothing but the pending counts."""

    namespace: str
    name: str
    active: str  # the status of its Active condition: True or False
    pending_active: int
    pending_inadmissible: int
    reserving: int
    admitted: int
    cluster_queue_exists: bool
    flavors: tuple[FR, ...]
    reserved: dict[FR, int]
    in_use: dict[FR, int]


def local_queue_metrics(engine: Engine) -> list[LocalQueueMetrics]:
    """Every LocalQueue; walks the set-aside pending workloads and those holding quota, no others."""
    inadmissible = engine.local_queue_inadmissible()
    usage = engine.local_queue_usage()
    flavors: dict[str, tuple[FR, ...]] = {}
    out = []
    for key, lq in engine.local_queue_statuses().items():
        cq_name = lq.spec.cluster_queue
        if lq.cluster_queue_exists and cq_name not in flavors:
            cq = engine.cluster_queue_status(cq_name)
            flavors[cq_name] = () if cq is None else tuple(
                (fq.name, resource) for group in cq.spec.resource_groups for fq in group.flavors
                for resource in fq.resources)
        parked = inadmissible.get(key, 0)
        reserved, in_use = usage.get(key, ({}, {}))
        namespace, _, name = key.partition("/")
        out.append(LocalQueueMetrics(
            namespace=namespace, name=name, active=local_queue_active(lq)["status"],
            pending_active=lq.pending - parked, pending_inadmissible=parked, reserving=lq.reserving,
            admitted=lq.admitted, cluster_queue_exists=lq.cluster_queue_exists,
            flavors=flavors.get(cq_name, ()) if lq.cluster_queue_exists else (), reserved=reserved, in_use=in_use,
        ))
    return out


def local_queue_of(engine: Engine, key: str) -> tuple[str, str] | None:
    """(namespace, LocalQueue name) of a Workload."""
    w = engine.workload_status(key)
    return None if w is None else (w.spec.namespace, w.spec.queue_name)


def priority_class_of(engine: Engine, key: str) -> str:
    """The Workload's priority class name (WorkloadPriorityClass or PriorityClass), "" for none."""
    w = engine.workload_status(key)
    return (w.spec.priority_class_name or "") if w is not None else ""


def finished_under(engine: Engine, key: str) -> str:
    """The ClusterQueue a finished Workload was admitted to ("" when it never was), as upstream
    counts a finished workload under status.admission.clusterQueue."""
    w = engine.workload_status(key)
    return w.admission.cluster_queue if w is not None and w.admission is not None else ""


def has_admission_checks(engine: Engine, key: str) -> bool:
    w = engine.workload_status(key)
    return w is not None and bool(w.check_states)


def reserved_time(engine: Engine, key: str) -> float | None:
    """When the Workload last got its quota reservation, in Unix seconds."""
    w = engine.workload_status(key)
    return None if w is None or w.reserved_us is None else w.reserved_us / 1_000_000


def admitted_time(engine: Engine, key: str) -> float | None:
    """When the Workload was last admitted, in Unix seconds."""
    w = engine.workload_status(key)
    return None if w is None or w.admitted_us is None else w.admitted_us / 1_000_000


def waits_for_pods_ready(engine: Engine) -> bool:
    return engine.config.wait_for_pods_ready.enable


def has_candidates(engine: Engine) -> bool:
    """Some ClusterQueue has a workload the next scheduling pass will try (an admission attempt)."""
    return engine.has_candidates()


def cluster_queue_of(engine: Engine, key: str) -> str | None:
    w = engine.workload_status(key)
    return None if w is None else w.cluster_queue


def creation_time(engine: Engine, key: str) -> float | None:
    """The Workload's creationTimestamp in Unix seconds."""
    w = engine.workload_status(key)
    return None if w is None else w.spec.creation_time


def metrics_config(engine: Engine) -> model.Metrics:
    return engine.config.metrics


def fair_sharing_enabled(engine: Engine) -> bool:
    return engine.config.fair_sharing.enable


def live_queues(engine: Engine) -> tuple[set[str], set[str]]:
    """(the ClusterQueues, the NAMESPACE/NAME of the LocalQueues whose ClusterQueue exists): whose
    series `/metrics` keeps; upstream clears the others' series."""
    lqs = {key for key, lq in engine.local_queue_statuses().items() if lq.cluster_queue_exists}
    return set(engine.cluster_queue_names()), lqs
