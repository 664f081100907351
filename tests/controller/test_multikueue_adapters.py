"""MultiKueue's per-kind adapters (upstream's ``*_multikueue_adapter.go``): which owners are whose, the
managedBy rule, the object a worker gets, and the status the manager's object mirrors. Each expected
value is written out by hand from upstream's adapters."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.controller.multikueue import adapters as adapters
from pykueue.jobs.job.multikueue import ADAPTER as JOB
from pykueue.jobs.jobset.multikueue import ADAPTER as JOBSET
from pykueue.jobs.pod.multikueue import ADAPTER as POD
from pykueue.jobs.ray.multikueue import RAY_CLUSTER, RAY_JOB
from pykueue.kube import resources as r

MK = "kueue.x-k8s.io/multikueue"


def obj(kind: str, api_version: str, spec: dict[str, Any], status: dict[str, Any] | None = None,
        name: str = "a", labels: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {
        "name": name, "namespace": "ns", "uid": "u-1", "resourceVersion": "7", "generation": 2,
        "labels": labels if labels is not None else {"kueue.x-k8s.io/queue-name": "lq"},
        "annotations": {"note": "x"}, "ownerReferences": [{"kind": "X", "name": "y"}], "finalizers": ["f"]},
        "spec": spec}
    if status is not None:
        out["status"] = status
    return out


@pytest.mark.parametrize(("owner", "kind"), [
    ({"apiVersion": "batch/v1", "kind": "Job"}, "Job"),
    ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}, "JobSet"),
    ({"apiVersion": "ray.io/v1", "kind": "RayJob"}, "RayJob"),
    ({"apiVersion": "ray.io/v1", "kind": "RayCluster"}, "RayCluster"),
    ({"apiVersion": "v1", "kind": "Pod"}, "Pod"),
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, None),  # its Pods are the Workload's owners instead
    ({"apiVersion": "example.com/v1", "kind": "Job"}, None),  # another group's Job is not batch's
])
def test_each_owner_kind_finds_its_adapter(owner: dict[str, str], kind: str | None) -> None:
    found = adapters.for_owner(owner)
    assert (found.resource.kind if found else None) == kind


@pytest.mark.parametrize("adapter", [JOB, JOBSET, RAY_JOB, RAY_CLUSTER])
def test_kinds_with_managed_by_must_name_multikueue(adapter: adapters.Adapter) -> None:
    api = adapter.resource.api_version
    assert adapter.unmanaged(obj(adapter.resource.kind, api, {"managedBy": MK})) is None
    assert adapter.unmanaged(obj(adapter.resource.kind, api, {})) == (
        'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""')
    assert adapter.unmanaged(obj(adapter.resource.kind, api, {"managedBy": "ray.io/kuberay-operator"})) == (
        'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "ray.io/kuberay-operator"')


def test_pods_are_always_handed_over() -> None:
    assert POD.unmanaged(obj("Pod", "v1", {"containers": []})) is None


@pytest.mark.parametrize("adapter", [JOBSET, RAY_JOB, RAY_CLUSTER])
def test_the_worker_gets_the_spec_without_managed_by_and_labels_naming_the_workload(
        adapter: adapters.Adapter) -> None:
    local = obj(adapter.resource.kind, adapter.resource.api_version, {"managedBy": MK, "suspend": False, "x": [1]},
                status={"state": "ready"})
    assert adapter.clone(local, "wl-1", "mgr") == {
        "apiVersion": adapter.resource.api_version, "kind": adapter.resource.kind,
        "metadata": {"name": "a", "namespace": "ns", "annotations": {"note": "x"}, "labels": {
            "kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/prebuilt-workload-name": "wl-1",
            "kueue.x-k8s.io/multikueue-origin": "mgr"}},
        "spec": {"suspend": False, "x": [1]}}
    assert local["spec"]["managedBy"] == MK  # the manager's own object untouched


def test_a_job_goes_without_the_selector_and_labels_the_managers_api_server_added() -> None:
    local = obj("Job", "batch/v1", {"managedBy": MK, "selector": {"matchLabels": {"controller-uid": "u"}},
                                    "template": {"metadata": {"labels": {"controller-uid": "u", "job-name": "a",
                                                                         "batch.kubernetes.io/job-name": "a",
                                                                         "batch.kubernetes.io/controller-uid": "u",
                                                                         "app": "x"}}}})
    assert JOB.clone(local, "wl", "o")["spec"] == {"template": {"metadata": {"labels": {"app": "x"}}}}


def test_a_pod_goes_with_its_spec_and_gate_as_they_are() -> None:
    spec = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "containers": [{"name": "c"}]}
    local = obj("Pod", "v1", spec, labels={"kueue.x-k8s.io/pod-group-name": "g"})
    clone = POD.clone(local, "wl", "o")
    assert clone["spec"] == spec and clone["apiVersion"] == "v1"
    assert clone["metadata"]["labels"] == {"kueue.x-k8s.io/pod-group-name": "g",
                                           "kueue.x-k8s.io/prebuilt-workload-name": "wl",
                                           "kueue.x-k8s.io/multikueue-origin": "o"}


def test_status_mirrored_per_kind() -> None:
    remote = {"status": {"conditions": [{"type": "Completed", "status": "True"}], "replicatedJobsStatus": []}}
    jobset = obj("JobSet", "jobset.x-k8s.io/v1alpha2", {"suspend": True})
    assert JOBSET.mirrored(jobset, remote) == remote["status"]  # copied whatever the local suspend
    job = obj("Job", "batch/v1", {"suspend": True})
    assert JOB.mirrored(job, {"status": {"active": 1}}) is None  # a suspended Job's status is not its run's
    job["spec"]["suspend"] = False
    assert JOB.mirrored(job, {"status": {"active": 1}}) == {"active": 1}


def test_a_gated_pod_keeps_its_own_pod_scheduled_condition_until_the_workers_pod_is_scheduled() -> None:
    """The manager's gated Pod keeps SchedulingGated while the worker's Pod is unscheduled (no copied
    Unschedulable for the manager's autoscaler), and shows the worker's PodScheduled=True once it is
    (upstream's spec: the running manager Pod reports PodScheduled=True while it stays gated)."""
    gated = obj("Pod", "v1", {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}, status={
        "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})
    waiting = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    assert POD.mirrored(gated, waiting) == {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}
    remote = {"status": {"phase": "Running", "conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}}
    assert POD.mirrored(gated, remote) == remote["status"]
    ungated = obj("Pod", "v1", {}, status=gated["status"])
    assert POD.mirrored(ungated, waiting) == waiting["status"]
    deleting = obj("Pod", "v1", {}, status=gated["status"])
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert POD.mirrored(deleting, remote) is None


def test_given_up_copies_show_nothing_running() -> None:
    job = obj("Job", "batch/v1", {"suspend": True}, status={"active": 2, "ready": 1, "succeeded": 1, "startTime": "t"})
    assert JOB.given_up(job) == {"succeeded": 1}
    # still unsuspended: the API server refuses a status without the startTime
    running = obj("Job", "batch/v1", {}, status={"active": 2, "ready": 1, "succeeded": 1, "startTime": "t"})
    assert JOB.given_up(running) == {"succeeded": 1, "startTime": "t"}
    assert JOB.given_up(obj("Job", "batch/v1", {}, status={"succeeded": 1})) is None
    jobset = obj("JobSet", "jobset.x-k8s.io/v1alpha2", {}, status={"replicatedJobsStatus": [
        {"name": "w", "active": 2, "ready": 2, "succeeded": 0}]})
    assert JOBSET.given_up(jobset) == {"replicatedJobsStatus": [
        {"name": "w", "active": 0, "ready": 0, "succeeded": 0}]}
    assert RAY_CLUSTER.given_up(obj("RayCluster", "ray.io/v1", {}, status={"state": "ready"})) == {
        "state": "suspended"}
    assert RAY_JOB.given_up(obj("RayJob", "ray.io/v1", {}, status={"jobDeploymentStatus": "Running"})) == {
        "jobDeploymentStatus": "Suspended"}
    assert RAY_JOB.given_up(obj("RayJob", "ray.io/v1", {}, status={"jobDeploymentStatus": "Complete"})) is None
    assert POD.given_up(obj("Pod", "v1", {}, status={"phase": "Running"})) is None


def test_a_pod_groups_workload_stands_for_every_pod_it_owns() -> None:
    pods = {f"ns/p{i}": obj("Pod", "v1", {}, name=f"p{i}") for i in range(3)}
    workload = {"metadata": {"namespace": "ns", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p0"}, {"apiVersion": "v1", "kind": "Pod", "name": "p2"}]}}
    found = POD.local_objects(workload, pods)
    assert [p["metadata"]["name"] for p in found or []] == ["p0", "p2"]
    workload["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "Pod", "name": "p9"})
    assert POD.local_objects(workload, pods) is None  # one not cached yet: wait for it


def test_a_single_object_kind_takes_the_controller_owner() -> None:
    jobs = {"ns/a": obj("Job", "batch/v1", {}), "ns/b": obj("Job", "batch/v1", {}, name="b")}
    workload = {"metadata": {"namespace": "ns", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "a"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "b", "controller": True}]}}
    assert [j["metadata"]["name"] for j in JOB.local_objects(workload, jobs) or []] == ["b"]


def test_a_worker_watches_the_kinds_the_manager_caches() -> None:
    assert adapters.watched({"jobs": 1, "workloads": 1, "rayjobs": 1}) == [r.JOB, r.RAY_JOB]
