"""Read-only views of the engine's state for the controller's status writers.

The one place in the controller that reads engine state; everything else asks through these
functions, so the engine's internals can change shape behind them.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.quantity import format_quantity
from pykueue.controller.workload_status import WorkloadView
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State


def workload(engine: Engine, key: str) -> WorkloadView | None:
    info = engine.workloads.get(key)
    if info is None:
        return None
    return WorkloadView(
        state=info.state,
        cluster_queue=info.cluster_queue,
        admission=info.admission,
        reason=info.reason,
        message=info.message,
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
        "message": "Can admit new workloads" if reason is None else _inactive_message(reason),
    }
    return {
        "pendingWorkloads": engine.pending_count(name),
        "reservingWorkloads": len(cq.admitted),
        "admittedWorkloads": admitted,
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "conditions": [active],
    }


def _inactive_message(reason: str) -> str:
    return {
        "Stopped": "Can't admit new workloads; clusterQueue is stopped",
        "FlavorNotFound": "Can't admit new workloads: references missing ResourceFlavor(s)",
        "AdmissionCheckNotFound": "Can't admit new workloads: references missing AdmissionCheck(s)",
        "CohortCycle": "Can't admit new workloads: the cohort hierarchy has a cycle",
    }.get(reason, f"Can't admit new workloads: {reason}")


def local_queue_counts(engine: Engine) -> dict[str, dict[str, int]]:
    """pending / reserving / admitted workloads per LocalQueue key (NAMESPACE/NAME)."""
    counts: dict[str, dict[str, int]] = {key: {"pendingWorkloads": 0, "reservingWorkloads": 0,
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
    return counts
