"""API objects as the dashboard's watch caches them, built by hand for the unit tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
V1B2 = "kueue.x-k8s.io/v1beta2"


def flavor(name: str) -> Obj:
    return {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def cluster_queue(name: str, cohort: str | None, cpu: str, *, borrowing: str | None = None,
                  lending: str | None = None, used: str = "0", borrowed: str = "0", share: int | None = None,
                  pending: int = 0, admitted: int = 0) -> Obj:
    res: Obj = {"name": "cpu", "nominalQuota": cpu}
    if borrowing is not None:
        res["borrowingLimit"] = borrowing
    if lending is not None:
        res["lendingLimit"] = lending
    spec: Obj = {"namespaceSelector": {}, "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [res]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    status: Obj = {"pendingWorkloads": pending, "reservingWorkloads": admitted, "admittedWorkloads": admitted,
                   "flavorsReservation": [{"name": "default", "resources": [
                       {"name": "cpu", "total": used, "borrowed": borrowed}]}],
                   "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit"}]}
    if share is not None:
        status["fairSharing"] = {"weightedShare": share}
    return {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec, "status": status}


def cohort(name: str, parent: str | None = None) -> Obj:
    return {"apiVersion": V1B2, "kind": "Cohort", "metadata": {"name": name},
            "spec": {"parentName": parent} if parent else {}}


def local_queue(namespace: str, name: str, cq: str) -> Obj:
    return {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def workload(name: str, *, namespace: str = "team", queue: str = "lq", cpu: str = "1", priority: int = 0,
             created: str = "2026-01-01T00:00:00Z", conditions: list[Obj] | None = None,
             admission: Obj | None = None, active: bool = True, owner: str | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": created}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": f"uid-job-{owner}",
                                    "controller": True}]
    spec: Obj = {"queueName": queue, "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}]}
    if not active:
        spec["active"] = False
    status: Obj = {"conditions": conditions or []}
    if admission is not None:
        status["admission"] = admission
    return {"apiVersion": V1B2, "kind": "Workload", "metadata": meta, "spec": spec, "status": status}


def cond(kind: str, status: str, reason: str, message: str = "", at: str = "2026-01-01T00:00:00Z") -> Obj:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


def admitted(cq: str, at: str, cpu: str = "1") -> tuple[list[Obj], Obj]:
    """The conditions and admission of a workload admitted in ``cq`` at ``at`` on flavor default."""
    conditions = [cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", at),
                  cond("Admitted", "True", "Admitted", "The workload is admitted", at)]
    admission = {"clusterQueue": cq, "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}}]}
    return conditions, admission


def objects(**kinds: list[Obj]) -> dict[str, dict[str, Obj]]:
    """plural -> key -> object, as ``Feed.objects`` gives them."""
    out: dict[str, dict[str, Obj]] = {}
    for plural, items in kinds.items():
        out[plural] = {}
        for obj in items:
            m = obj["metadata"]
            out[plural][f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]] = obj
    return out


NOW = 1767225600.0 + 600  # 2026-01-01T00:10:00Z


def live() -> dict[str, dict[str, Obj]]:
    """ClusterQueue solo: 2 cpu, no cohort; big holds 2, small waits for 1; ClusterQueue empty: 4 cpu."""
    held_c, held_a = admitted("solo", "2026-01-01T00:01:00Z", "2")
    return objects(
        namespaces=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}],
        resourceflavors=[flavor("default")],
        clusterqueues=[cluster_queue("solo", None, "2", used="2"), cluster_queue("empty", None, "4")],
        localqueues=[local_queue("team", "lq", "solo"), local_queue("team", "spare", "empty")],
        workloads=[workload("big", cpu="2", conditions=held_c, admission=held_a),
                   workload("small", created="2026-01-01T00:02:00Z", conditions=[
                       cond("QuotaReserved", "False", "Pending", "waiting")])],
    )


def job(name: str, queue: str, cpu: str = "1", extra: str = "") -> str:
    """A Job's YAML as a user pastes it into the what-if box."""
    return (f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: team\n  labels:\n"
            f"    kueue.x-k8s.io/queue-name: {queue}\n{extra}spec:\n  template:\n    spec:\n      restartPolicy: Never\n"
            f"      containers:\n      - name: c\n        image: busybox\n        resources:\n"
            f"          requests:\n            cpu: \"{cpu}\"\n")
