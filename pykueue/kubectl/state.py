"""What the verbs read off Kueue objects, as upstream reads it: a Workload's status word, its
ClusterQueue, and the pending workloads of a queue in the order Kueue would admit them.

The order is computed here, client-side, when the cluster does not serve the visibility API
(``visibility.kueue.x-k8s.io``) that upstream asks: the queued workloads (not finished, no quota
reserved, active) by priority, highest first, then by creation time; positions count from 0 as the
visibility API's do. The result has the visibility API's ``PendingWorkload`` shape either way, so that
the tables and ``-o json`` do not depend on where it came from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from pykueue.kube.objects import condition as condition
from pykueue.kube.objects import is_true as is_true

Obj = dict[str, Any]

PENDING, QUOTA_RESERVED, ADMITTED, FINISHED = "pending", "quotaReserved", "admitted", "finished"


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp of the API (``...Z``, maybe with microseconds)."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def workload_status(wl: Mapping[str, Any]) -> str:
    """``workload.Status``: finished, admitted, quotaReserved or pending, in that precedence."""
    if is_true(wl, "Finished"):
        return FINISHED
    if is_true(wl, "Admitted"):
        return ADMITTED
    if is_true(wl, "QuotaReserved"):
        return QUOTA_RESERVED
    return PENDING


def is_active(wl: Mapping[str, Any]) -> bool:
    return (wl.get("spec") or {}).get("active") is not False


def is_queued(wl: Mapping[str, Any]) -> bool:
    """Whether Kueue keeps it in its queue: pending and active (a stopped workload waits outside it)."""
    return workload_status(wl) == PENDING and is_active(wl)


def priority(wl: Mapping[str, Any]) -> int:
    value = (wl.get("spec") or {}).get("priority")
    return int(value) if isinstance(value, int) else 0


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def cohort(cq: Mapping[str, Any]) -> str:
    spec = cq.get("spec") or {}
    return str(spec.get("cohortName") or spec.get("cohort") or "")


def cluster_queue_of(wl: Mapping[str, Any], local_queues: Mapping[tuple[str, str], Obj]) -> str:
    """The ClusterQueue it reserved quota in, else the one its LocalQueue points to ('' when unknown)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    if admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    namespace, _ = key(wl)
    lq = local_queues.get((namespace, (wl.get("spec") or {}).get("queueName") or ""))
    return str(((lq or {}).get("spec") or {}).get("clusterQueue") or "")


def _order(wl: Mapping[str, Any]) -> tuple[int, datetime, str, str]:
    created = parse_time((wl.get("metadata") or {}).get("creationTimestamp")) or datetime.max.replace(tzinfo=UTC)
    return -priority(wl), created, *key(wl)


def pending_workloads(workloads: Iterable[Obj], local_queues: Mapping[tuple[str, str], Obj],
                      cluster_queue: str | None = None) -> list[Obj]:
    """The visibility API's ``PendingWorkload`` items of the queued workloads, per ClusterQueue in
    admission order (``cluster_queue``: that one's only), with positions in it and in their LocalQueue."""
    by_cq: dict[str, list[Obj]] = defaultdict(list)
    for wl in workloads:
        if not is_queued(wl):
            continue
        cq = cluster_queue_of(wl, local_queues)
        if cq and (cluster_queue is None or cq == cluster_queue):
            by_cq[cq].append(wl)
    items: list[Obj] = []
    for cq in sorted(by_cq):
        in_lq: dict[tuple[str, str], int] = defaultdict(int)
        for position, wl in enumerate(sorted(by_cq[cq], key=_order)):
            meta = wl.get("metadata") or {}
            lq = (meta.get("namespace") or "", (wl.get("spec") or {}).get("queueName") or "")
            items.append({
                "metadata": {k: meta[k] for k in ("name", "namespace", "creationTimestamp", "ownerReferences")
                             if k in meta},
                "priority": priority(wl),
                "localQueueName": lq[1],
                "positionInClusterQueue": position,
                "positionInLocalQueue": in_lq[lq],
            })
            in_lq[lq] += 1
    return items


def summary(items: list[Obj]) -> Obj:
    """A ``PendingWorkloadsSummary`` as the visibility API answers."""
    return {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
            "metadata": {}, "items": items}
