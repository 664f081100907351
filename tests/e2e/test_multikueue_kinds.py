"""MultiKueue for the kinds beyond batch/v1 Job (issue 42 item 3), on real API servers: a manager and
two workers (``multikueue_setup``), the workers running JobSet's controller and KubeRay's operator (the
``jobset`` and ``ray`` addons) and every controller its webhooks (the Pod integration gates through
them); the manager stores JobSets and Ray objects (their CRDs) but runs none.

For each kind, as upstream's per-kind adapters do (pkg/controller/jobs/*/..._multikueue_adapter.go): the
manager's object is dispatched to one worker, created there with the prebuilt Workload's name and this
manager's origin as labels (and no ``managedBy``, so the worker's controller runs it), its status is
mirrored on the manager's object, it finishes there and the remote objects are deleted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import eventually, is_true
from tests.e2e.multikueue_setup import Clusters
from tests.e2e.pod_objects import succeed
from tests.e2e.ray_objects import raycluster, rayjob
from tests.e2e.test_multikueue import NS

pytestmark = pytest.mark.e2e
ORIGIN = "mk-manager"
MK = "kueue.x-k8s.io/multikueue"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"


@pytest.fixture(scope="module")
def clusters(multikueue_clusters: Clusters) -> Clusters:
    """The session's manager and workers (``multikueue_setup.SHARED``)."""
    return multikueue_clusters


def workload_for(kueue: Any, kind: str, name: str) -> dict[str, Any] | None:
    for wl in kueue.items("workloads.kueue.x-k8s.io", NS):
        if any(o.get("kind") == kind and o.get("name") == name for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def check_state(wl: dict[str, Any] | None) -> dict[str, Any]:
    return next((c for c in ((wl or {}).get("status") or {}).get("admissionChecks") or [] if c["name"] == "mk"), {})


def admitted_on_one_worker(clusters: Clusters, kind: str, name: str) -> tuple[dict[str, Any], str]:
    """The manager's Workload admitted through one worker (the check Ready naming it); that worker."""
    wl = eventually(lambda: (w := workload_for(clusters.manager, kind, name)) and is_true(w, "Admitted") and w, 120,
                    what=f"the manager's Workload of {kind} {name} admitted")
    chosen = wl["status"]["clusterName"]
    assert chosen in clusters.workers
    assert check_state(wl) == {**check_state(wl), "state": "Ready",
                               "message": f'The workload got reservation on "{chosen}"'}
    return wl, chosen


def remote_of(clusters: Clusters, worker: str, resource: str, name: str, workload: str) -> dict[str, Any]:
    """The object on the chosen worker, with the prebuilt and origin labels and no managedBy; the other
    worker has neither it nor a copy of the Workload."""
    remote = eventually(lambda: clusters.workers[worker].get(resource, name, NS), 90, what=f"the remote {resource}")
    labels = remote["metadata"]["labels"]
    assert (labels[PREBUILT], labels[ORIGIN_LABEL]) == (workload, ORIGIN)
    assert "managedBy" not in remote["spec"]
    other = next(w for w in clusters.workers if w != worker)
    eventually(lambda: clusters.workers[other].get("workload", workload, NS) is None, 60,
               what=f"the copy in {other} removed")
    assert clusters.workers[other].get(resource, name, NS) is None
    return remote


def cleaned(clusters: Clusters, worker: str, resource: str, name: str, workload: str) -> None:
    eventually(lambda: clusters.workers[worker].get("workload", workload, NS) is None
               and clusters.workers[worker].get(resource, name, NS) is None, 90, what="the remote objects deleted")


def dispatched(clusters: Clusters, obj: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A Ray object created on the manager with MultiKueue's managedBy, admitted through one worker
    and created there; its Workload and that worker."""
    obj["spec"]["managedBy"] = MK
    clusters.manager.apply([obj])
    kind, name = obj["kind"], obj["metadata"]["name"]
    wl, chosen = admitted_on_one_worker(clusters, kind, name)
    remote_of(clusters, chosen, kind.lower(), name, wl["metadata"]["name"])
    return wl, chosen


def jobset(name: str, managed_by: str | None = MK) -> dict[str, Any]:
    """Two replicated jobs of one 1-cpu pod each, each pod running 3 s on kwok."""
    def replicated(rj: str) -> dict[str, Any]:
        return {"name": rj, "replicas": 1, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "3s"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": rj, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}

    spec: dict[str, Any] = {"replicatedJobs": [replicated("driver"), replicated("workers")]}
    if managed_by:
        spec["managedBy"] = managed_by
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}}, "spec": spec}


def pod(name: str, group: str | None = None, count: int = 1) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    annotations = {}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(count)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": NS, "labels": labels, "annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}


def test_a_pod_is_dispatched_runs_on_one_worker_and_finishes(clusters: Clusters) -> None:
    manager = clusters.manager
    manager.apply([pod("solo")])
    wl, chosen = admitted_on_one_worker(clusters, "Pod", "solo")
    remote_of(clusters, chosen, "pod", "solo", wl["metadata"]["name"])
    def scheduled_there() -> dict[str, Any] | None:
        got = manager.get("pod", "solo", NS) or {}
        status = got.get("status") or {}
        return got if status.get("phase") == "Running" and any(
            c.get("type") == "PodScheduled" and c.get("status") == "True" for c in status.get("conditions") or []) else None
    # upstream's "Should overwrite the manager Pod's SchedulingGated condition once it runs on the worker"
    running = eventually(scheduled_there, 120, what="the manager's Pod Running and PodScheduled, mirrored")
    assert [c["name"] for c in running["status"]["containerStatuses"]] == ["main"]
    # the manager's Pod stays gated: it runs on the worker only (no scheduler on the tier 1 manager sets
    # its SchedulingGated condition, so the one kept while the worker's is unscheduled is the unit tests')
    assert {"name": "kueue.x-k8s.io/admission"} in running["spec"]["schedulingGates"]
    succeed(clusters.workers[chosen], "solo", NS)  # kwok completes only a Job's pods: its container exits here
    eventually(lambda: (manager.get("pod", "solo", NS) or {}).get("status", {}).get("phase") == "Succeeded", 120,
               what="the manager's Pod Succeeded, mirrored")
    eventually(lambda: is_true(workload_for(manager, "Pod", "solo"), "Finished"), 60,
               what="the manager's Workload Finished")
    cleaned(clusters, chosen, "pod", "solo", wl["metadata"]["name"])


def test_a_pod_group_runs_together_on_one_worker(clusters: Clusters) -> None:
    manager = clusters.manager
    manager.apply([pod(f"member-{i}", group="grp", count=2) for i in range(2)])
    wl, chosen = admitted_on_one_worker(clusters, "Pod", "member-0")
    assert wl["metadata"]["name"] == "grp"
    for i in range(2):
        remote_of(clusters, chosen, "pod", f"member-{i}", "grp")
    for i in range(2):
        eventually(lambda i=i: (manager.get("pod", f"member-{i}", NS) or {}).get("status", {}).get("phase")
                   == "Running", 120, what=f"member-{i} Running, mirrored")
    for i in range(2):
        succeed(clusters.workers[chosen], f"member-{i}", NS)
    for i in range(2):
        eventually(lambda i=i: (manager.get("pod", f"member-{i}", NS) or {}).get("status", {}).get("phase")
                   == "Succeeded", 120, what=f"member-{i} Succeeded, mirrored")
    eventually(lambda: is_true(workload_for(manager, "Pod", "member-0"), "Finished"), 60, what="the group finished")
    for i in range(2):
        cleaned(clusters, chosen, "pod", f"member-{i}", "grp")


def test_a_jobset_is_dispatched_runs_on_one_worker_and_finishes(clusters: Clusters) -> None:
    manager = clusters.manager
    manager.apply([jobset("js")])
    wl, chosen = admitted_on_one_worker(clusters, "JobSet", "js")
    remote = remote_of(clusters, chosen, "jobset", "js", wl["metadata"]["name"])
    assert [rj["name"] for rj in remote["spec"]["replicatedJobs"]] == ["driver", "workers"]
    done = eventually(lambda: is_true(j := manager.get("jobset", "js", NS), "Completed") and j, 180,
                      what="the manager's JobSet Completed, mirrored")
    assert sorted(s["name"] for s in done["status"]["replicatedJobsStatus"]) == ["driver", "workers"]
    assert all(s.get("succeeded") == 1 for s in done["status"]["replicatedJobsStatus"])
    eventually(lambda: is_true(workload_for(manager, "JobSet", "js"), "Finished"), 60,
               what="the manager's Workload Finished")
    cleaned(clusters, chosen, "jobset", "js", wl["metadata"]["name"])


def test_a_jobset_not_managed_by_multikueue_is_rejected(clusters: Clusters) -> None:
    manager = clusters.manager
    manager.apply([jobset("plain-js", managed_by="example.com/elsewhere")])  # another controller's
    # read in the same poll that sees Rejected: the eviction that follows resets the check to Pending
    rejected = eventually(lambda: (c := check_state(workload_for(manager, "JobSet", "plain-js"))).get("state")
                          == "Rejected" and c, 60, what="the check Rejected")
    assert rejected["message"] == (
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" '
        'not "example.com/elsewhere"')
    for worker in clusters.workers.values():
        assert worker.get("jobset", "plain-js", NS) is None


def test_a_rayjob_is_dispatched_runs_on_one_worker_and_finishes(clusters: Clusters) -> None:
    """No Ray runs on kwok's nodes: the submitter completes without a Ray job behind it and KubeRay
    fails the RayJob after its grace period; that final status is what comes back to the manager."""
    manager = clusters.manager
    wl, chosen = dispatched(clusters, rayjob("rj", NS))
    eventually(lambda: (clusters.workers[chosen].get("rayjob", "rj", NS) or {}).get("status", {}).get(
        "jobDeploymentStatus") in ("Initializing", "Running", "Complete", "Failed"), 120, what="KubeRay runs the copy")
    done = eventually(lambda: (j := manager.get("rayjob", "rj", NS)) and j.get("status", {}).get(
        "jobDeploymentStatus") in ("Complete", "Failed") and j, 240, what="the manager's RayJob finished, mirrored")
    assert done["status"]["jobDeploymentStatus"] == "Failed"
    eventually(lambda: is_true(workload_for(manager, "RayJob", "rj"), "Finished"), 60,
               what="the manager's Workload Finished")
    cleaned(clusters, chosen, "rayjob", "rj", wl["metadata"]["name"])


def test_a_raycluster_is_dispatched_reported_ready_and_removed_with_its_manager_object(clusters: Clusters) -> None:
    """A RayCluster never finishes by itself: it runs on its worker, its state comes back, and deleting
    the manager's RayCluster (and so its Workload) removes the remote one."""
    manager = clusters.manager
    wl, chosen = dispatched(clusters, raycluster("rc", NS))
    ready = eventually(lambda: (c := manager.get("raycluster", "rc", NS)) and c.get("status", {}).get(
        "state") == "ready" and c, 180, what="the manager's RayCluster ready, mirrored")
    assert ready["status"].get("readyWorkerReplicas") == 1
    manager.cluster.kubectl("delete", "raycluster", "rc", "-n", NS)
    # its Workload goes as the garbage collector would take it (the tier 1 manager runs none)
    manager.cluster.kubectl("delete", "workload", wl["metadata"]["name"], "-n", NS, "--wait=false")
    cleaned(clusters, chosen, "raycluster", "rc", wl["metadata"]["name"])

    def pods_left() -> list[str]:
        items = json.loads(clusters.workers[chosen].cluster.kubectl(
            "get", "pods", "-n", NS, "-l", "ray.io/cluster=rc", "-o", "json").stdout)["items"]
        return [p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp")]

    eventually(lambda: not pods_left(), 90, what="the remote cluster's pods gone")
