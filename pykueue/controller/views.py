"""Read-only views of the engine's state for the controller's status writers.

The one place in the controller that reads engine state; everything else asks through these
functions, so the engine's internals can change shape behind them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykueue.api.quantity import format_quantity
from pykueue.controller.workload_status import WorkloadView
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State


def workload(engine: Engine, key: str) -> WorkloadView | None:
    info = engine.workloads.get(key)
    if info is None:
        return None
    reason, message = engine.condition_of(info)  # the QuotaReserved=False wording, as upstream's
    return WorkloadView(
        state=info.state,
        cluster_queue=info.cluster_queue,
        admission=info.admission,
        reason=reason,
        message=message,
        requeue_count=info.requeue_count,
        requeue_at=info.requeue_at,
        evictions=info.evictions,
        spec=info.spec,
        check_states=dict(info.check_states),
    )


def holds_quota(engine: Engine, key: str) -> bool:
    info = engine.workloads.get(key)
    return info is not None and info.state in (State.QUOTA_RESERVED, State.ADMITTED)


def pods_ready(engine: Engine, key: str) -> bool:
    info = engine.workloads.get(key)
    return info is not None and info.pods_ready


def admitted_state(engine: Engine, key: str) -> State | None:
    info = engine.workloads.get(key)
    return None if info is None else info.state


def check_states(engine: Engine, key: str) -> dict[str, str]:
    info = engine.workloads.get(key)
    return {} if info is None else dict(info.check_states)


def reclaimable_pods(engine: Engine, key: str) -> dict[str, int] | None:
    """The reclaimable pods the engine charges the workload without, None for an unknown workload."""
    info = engine.workloads.get(key)
    return None if info is None else dict(info.spec.reclaimable_pods)


def pending_keys(engine: Engine) -> list[str]:
    return [k for k, i in engine.workloads.items() if i.state is State.PENDING]


def cluster_queue_status(engine: Engine, name: str) -> dict[str, Any] | None:
    """`ClusterQueue.status` as upstream reports it: counts, usage per flavor, the Active condition."""
    cq = engine.cqs.get(name)
    if cq is None:
        return None
    admitted = sum(1 for i in cq.admitted.values() if i.state is State.ADMITTED)
    flavors: dict[str, list[dict[str, str]]] = {}
    for group in cq.spec.resource_groups:
        for fq in group.flavors:
            rows = flavors.setdefault(fq.name, [])
            for resource, quota in fq.resources.items():
                used = cq.node.usage.get((fq.name, resource), 0)
                borrowed = max(0, used - quota.nominal)
                rows.append({"name": resource, "total": format_quantity(resource, used),
                             "borrowed": format_quantity(resource, borrowed)})
    usage = [{"name": flavor, "resources": rows} for flavor, rows in flavors.items()]
    reason = cq.inactive_reason
    active = {
        "type": "Active",
        "status": "True" if reason is None else "False",
        "reason": "Ready" if reason is None else reason,
        "message": "Can admit new workloads" if reason is None else _inactive_message(engine, name, reason),
    }
    return {
        "pendingWorkloads": engine.pending_count(name),
        "reservingWorkloads": len(cq.admitted),
        "admittedWorkloads": admitted,
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "conditions": [active],
    }


def _inactive_message(engine: Engine, name: str, reason: str) -> str:
    """Upstream's Active=False message: every problem the queue has, the first one's reason first
    ("Can't admit new workloads: references missing ResourceFlavor(s): a,b.")."""
    cq = engine.cqs[name]
    flavors = list(dict.fromkeys(fq.name for g in cq.spec.resource_groups for fq in g.flavors))
    missing_flavors = [f for f in flavors if f not in engine.flavors]
    missing_checks = sorted(r.name for r in cq.spec.admission_checks if r.name not in engine.admission_checks)
    parts = []
    if reason == "Stopped":
        parts.append("is stopped")
    if missing_flavors:
        parts.append(f"references missing ResourceFlavor(s): {','.join(missing_flavors)}")
    if missing_checks:
        parts.append(f"references missing AdmissionCheck(s): {','.join(missing_checks)}")
    if reason == "CohortCycle":
        parts.append("its cohort is part of a cycle of Cohort parents")
    return f"Can't admit new workloads: {', '.join(parts or [reason])}."


def local_queue_active(engine: Engine, key: str) -> dict[str, str]:
    """A LocalQueue's Active condition, worded as upstream's LocalQueue reconciler words it."""
    lq = engine.local_queues[key]
    if lq.stop_policy != model.STOP_NONE:
        return _active(False, "Stopped", "LocalQueue is stopped")
    cq = engine.cqs.get(lq.cluster_queue)
    if cq is None:
        return _active(False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    if not cq.active:
        return _active(False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    return _active(True, "Ready", "Can submit new workloads to localQueue")


def _active(status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": "Active", "status": "True" if status else "False", "reason": reason, "message": message}


def local_queue_statuses(engine: Engine) -> dict[str, dict[str, Any]]:
    """`LocalQueue.status` per key (NAMESPACE/NAME): pending / reserving / admitted counts and Active."""
    counts: dict[str, dict[str, Any]] = {key: {"pendingWorkloads": 0, "reservingWorkloads": 0,
                                               "admittedWorkloads": 0} for key in engine.local_queues}
    for info in engine.workloads.values():
        row = counts.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        if row is None:
            continue
        if info.state is State.PENDING:
            row["pendingWorkloads"] += 1
        elif info.state in (State.QUOTA_RESERVED, State.ADMITTED):
            row["reservingWorkloads"] += 1
            if info.state is State.ADMITTED:
                row["admittedWorkloads"] += 1
    for key, row in counts.items():
        row["conditions"] = [local_queue_active(engine, key)]
    return counts


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
    reserved: dict[tuple[str, str], int]  # quota held by QuotaReserved and Admitted workloads
    in_use: dict[tuple[str, str], int]  # quota held by Admitted workloads only


def queue_metrics(engine: Engine) -> list[QueueMetrics]:
    out = []
    for name, cq in engine.cqs.items():
        members = cq.pending.members()
        parked = sum(1 for info in members if cq.pending.is_parked(info.key))
        in_use: dict[tuple[str, str], int] = {}
        admitted = 0
        for info in cq.admitted.values():
            if info.state is State.ADMITTED:
                admitted += 1
                for fr, value in info.usage.items():
                    in_use[fr] = in_use.get(fr, 0) + value
        quotas = tuple((fq.name, resource, quota) for group in cq.spec.resource_groups for fq in group.flavors
                       for resource, quota in fq.resources.items())
        out.append(QueueMetrics(
            name=name, cohort=cq.spec.cohort or "", active=cq.inactive_reason is None,
            pending_active=len(members) - parked, pending_inadmissible=parked,
            reserving=len(cq.admitted), admitted=admitted, quotas=quotas,
            reserved=dict(cq.node.usage), in_use=in_use,
        ))
    return out


def has_candidates(engine: Engine) -> bool:
    """Some ClusterQueue has a workload the next scheduling pass will try (an admission attempt)."""
    return any(cq.pending.has_candidates() for cq in engine.cqs.values())


def cluster_queue_of(engine: Engine, key: str) -> str | None:
    info = engine.workloads.get(key)
    return None if info is None else info.cluster_queue


def creation_time(engine: Engine, key: str) -> float | None:
    """The Workload's creationTimestamp in Unix seconds."""
    info = engine.workloads.get(key)
    return None if info is None else info.spec.creation_time
