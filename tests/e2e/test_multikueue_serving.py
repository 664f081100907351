"""MultiKueue for StatefulSets and Deployments (issue 42 item 3's rest), on real API servers: a tier 1
manager and two tier 2 workers (``multikueue_setup``), every controller serving its webhooks.

As upstream: a StatefulSet has an adapter of its own (statefulset_multikueue_adapter.go): the worker
gets the StatefulSet with the prebuilt Workload's name, this manager's origin and the manager's UID
(``kueue.x-k8s.io/multikueue-origin-uid``), so the worker's reconciler names its Workload after the
manager's and makes none; no status comes back (no managedBy: the manager's own StatefulSet controller
would overwrite it). A Deployment has none: its Pods go through the Pod adapter as plain Pods, each
mirrored from its copy. The tier 1 manager runs no kube-controller-manager, so the test makes the
Deployment's Pod itself, as its ReplicaSet would, and deletes what its garbage collector would.

Sampled throughout, every 0.3 s on both workers (test_multikueue_faults' sampler): a workload's active
pods (by their prebuilt-workload label) are in at most one worker, and no worker ClusterQueue exceeds
its quota."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, eventually
from tests.e2e.multikueue_setup import Clusters
from tests.e2e.test_multikueue import NS
from tests.e2e.test_multikueue_faults import Invariants, holding, sampling
from tests.e2e.test_multikueue_kinds import (
    ORIGIN,
    ORIGIN_LABEL,
    PREBUILT,
    admitted_on_one_worker,
)

pytestmark = pytest.mark.e2e
ORIGIN_UID = "kueue.x-k8s.io/multikueue-origin-uid"


@pytest.fixture(scope="module")
def clusters(multikueue_clusters: Clusters) -> Clusters:
    """The session's manager and workers (``multikueue_setup.SHARED``)."""
    return multikueue_clusters


@pytest.fixture(scope="module")
def one_worker(clusters: Clusters) -> Iterator[Invariants]:
    yield from sampling(clusters.workers, key=PREBUILT)


@pytest.fixture(autouse=True)
def held_throughout(one_worker: Invariants) -> Iterator[None]:
    yield from holding(one_worker)


def container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
        "name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container("web")]}}}}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container("web")]}}}}


def pods_on(kueue: Kueue, selector: str) -> list[dict[str, Any]]:
    return [p for p in kueue.items("pods", NS, selector) if not p["metadata"].get("deletionTimestamp")]


def test_a_statefulset_is_dispatched_runs_on_one_worker_and_is_removed_with_its_manager_object(
        clusters: Clusters, one_worker: Invariants) -> None:
    manager = clusters.manager
    manager.apply([statefulset("web", 2)])
    local = manager.get("statefulset", "web", NS)
    assert local is not None
    wl, chosen = admitted_on_one_worker(clusters, "StatefulSet", "web")
    name = wl["metadata"]["name"]
    worker = clusters.workers[chosen]
    remote = eventually(lambda: worker.get("statefulset", "web", NS), 90, what="the remote StatefulSet")
    assert remote["metadata"]["labels"][PREBUILT] == name
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == ORIGIN
    assert remote["metadata"]["annotations"][ORIGIN_UID] == local["metadata"]["uid"]
    assert remote["spec"]["replicas"] == 2
    # the worker runs it under the copy of the manager's Workload: its Pods join that group, it makes none
    running = eventually(lambda: len(ps := [p for p in pods_on(worker, "app=web")
                                            if p["status"].get("phase") == "Running"]) == 2 and ps, 180,
                         what="both replicas Running on the worker")
    assert {p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] for p in running} == {name}
    assert [w["metadata"]["name"] for w in worker.items("workloads.kueue.x-k8s.io", NS)] == [name]
    other = next(w for w in clusters.workers if w != chosen)
    eventually(lambda: clusters.workers[other].get("workload", name, NS) is None, 60, what="the other copy removed")
    assert clusters.workers[other].get("statefulset", "web", NS) is None
    eventually(lambda: one_worker.seen.get(name) == {chosen}, 30, what="the sampler seeing its pods on that worker")
    # no status comes back: the manager's StatefulSet is its own controller's (none runs on tier 1)
    assert (manager.get("statefulset", "web", NS) or {}).get("status", {}).get("readyReplicas") in (None, 0)
    manager.cluster.kubectl("delete", "statefulset", "web", "-n", NS)
    # its Workload goes as the garbage collector would take it (the tier 1 manager runs none)
    manager.cluster.kubectl("delete", "workload", name, "-n", NS, "--wait=false")
    eventually(lambda: worker.get("workload", name, NS) is None and worker.get("statefulset", "web", NS) is None,
               90, what="the remote Workload and StatefulSet deleted")
    eventually(lambda: not pods_on(worker, "app=web"), 90, what="the remote replicas gone")


def test_a_deployments_pod_goes_as_a_plain_pod_and_its_status_comes_back(
        clusters: Clusters, one_worker: Invariants) -> None:
    manager = clusters.manager
    manager.apply([deployment("api")])
    marked = manager.get("deployment", "api", NS)
    assert marked is not None
    template = marked["spec"]["template"]
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == "deployment"
    # the Pod its ReplicaSet would make from that template (no ReplicaSet controller on the tier 1 manager)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "api-5d9c7-x2k4q", "namespace": NS, "labels": {**template["metadata"]["labels"],
                                                              "pod-template-hash": "5d9c7"},
        "annotations": dict(template["metadata"]["annotations"]), "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-5d9c7", "controller": True,
            "blockOwnerDeletion": True, "uid": "00000000-0000-0000-0000-00000000a5e1"}]},
        "spec": template["spec"]}
    manager.apply([pod])
    wl, chosen = admitted_on_one_worker(clusters, "Pod", "api-5d9c7-x2k4q")
    name = wl["metadata"]["name"]
    worker = clusters.workers[chosen]
    remote = eventually(lambda: worker.get("pod", "api-5d9c7-x2k4q", NS), 90, what="the remote Pod")
    assert remote["metadata"]["labels"][PREBUILT] == name
    assert not remote["metadata"].get("ownerReferences")  # a plain Pod there: no ReplicaSet behind it
    other = next(w for w in clusters.workers if w != chosen)
    eventually(lambda: clusters.workers[other].get("workload", name, NS) is None, 60, what="the other copy removed")
    running = eventually(lambda: (p := manager.get("pod", "api-5d9c7-x2k4q", NS))
                         and p["status"].get("phase") == "Running" and p, 120, what="the manager's Pod Running, mirrored")
    assert {"name": "kueue.x-k8s.io/admission"} in running["spec"]["schedulingGates"]  # it runs on the worker only
    eventually(lambda: one_worker.seen.get(name) == {chosen}, 30, what="the sampler seeing its pods on that worker")
    # scaled down: the ReplicaSet deletes its Pod, and the garbage collector the Workload the Pod owned
    # (the tier 1 manager runs neither); the copies go with it
    manager.cluster.kubectl("delete", "pod", "api-5d9c7-x2k4q", "-n", NS, "--wait=false")
    eventually(lambda: manager.get("pod", "api-5d9c7-x2k4q", NS) is None, 60, what="the manager's Pod finalized")
    manager.cluster.kubectl("delete", "workload", name, "-n", NS, "--wait=false")
    eventually(lambda: worker.get("pod", "api-5d9c7-x2k4q", NS) is None and worker.get("workload", name, NS) is None,
               120, what="the remote Pod and Workload deleted")
