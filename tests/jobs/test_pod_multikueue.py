"""On a MultiKueue manager a Pod's (or pod group's) Workload admitted through a worker (``status.clusterName``
names it) leaves the manager's Pods gated: MultiKueue creates and runs them on that worker, and the
manager's copies never schedule (upstream's Pod MultiKueue adapter keeps the manager's Pods gated)."""

from __future__ import annotations

from pykueue.jobs.framework import Patch, reconcile
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod.workload import workload_from_pod
from tests.jobs.pod_objects import ADMITTED, ASSIGNED, FLAVORS, managed_pod

GROUP = {"kueue.x-k8s.io/pod-group-name": "g"}
TOTAL = {"kueue.x-k8s.io/pod-group-total-count": "2"}


def _admitted(workload: dict, cluster: str | None, count: int = 1) -> dict:
    assignment = {**ASSIGNED, "podSetAssignments": [{**ASSIGNED["podSetAssignments"][0], "count": count}]}
    workload["status"] = {"conditions": list(ADMITTED), "admission": assignment}
    if cluster:
        workload["status"]["clusterName"] = cluster
    return workload


def _released(actions: list) -> list[str]:
    return [a.name for a in actions if isinstance(a, Patch) and a.kind == "Pod"
            and "schedulingGates" in (a.body.get("spec") or {})]


def test_a_pod_admitted_through_a_worker_stays_gated_here() -> None:
    pod = managed_pod()
    workload = workload_from_pod(pod)
    workload["metadata"].update({"name": "pod-p", "namespace": "ns"})
    assert _released(reconcile(pods.Pod(pod), _admitted(workload, "w1"), FLAVORS)) == []
    assert _released(reconcile(pods.Pod(pod), _admitted(workload, None), FLAVORS)) == ["p"]  # admitted here: runs here


def test_a_pod_group_admitted_through_a_worker_stays_gated_here() -> None:
    members = [managed_pod(n, labels=GROUP, annotations=TOTAL) for n in ("a", "b")]
    (created,) = reconcile(pods.PodGroup("ns", "g", members), None, FLAVORS)
    workload = created.manifest
    assert _released(reconcile(pods.PodGroup("ns", "g", members), _admitted(workload, "w2", 2), FLAVORS)) == []
    assert sorted(_released(reconcile(pods.PodGroup("ns", "g", members), _admitted(workload, None, 2), FLAVORS))) == [
        "a", "b"]
