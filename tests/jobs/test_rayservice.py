"""RayService as upstream integrates it (``pkg/controller/jobs/rayservice``): a serving workload whose
``spec.rayClusterConfig`` gives one Workload with head and worker pod sets, suspended and started through
``spec.rayClusterConfig.suspend``, active and ready while its ``Ready`` condition is true, never
finished. Each expectation is worked out by hand from upstream's controller and webhook."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from pykueue.controller.webhooks import admission, names
from pykueue.jobs.framework import CreateWorkload, Note, Patch, Replace, WorkloadConditions
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.ray import webhook as ray_update
from pykueue.jobs.ray.generic import RayObject, is_managed
from tests.jobs.writes import reconcile

from .test_ray_live import FLAVORS, _cluster_spec, admitted, raycluster

READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints"}]}


def rayservice(suspend: bool | None = True, status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    cluster = _cluster_spec()
    if suspend is not None:
        cluster["suspend"] = suspend
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "rs", "namespace": "ns", "uid": "u3", "resourceVersion": "7",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}, **meta},
            "spec": {"serveConfigV2": "applications: []", "rayClusterConfig": cluster},
            "status": status or {}}


def test_a_rayservice_gets_one_workload_with_its_clusters_pod_sets() -> None:
    """Named rayservice-rs-<hash> for kind RayService and owned by it; head x1, small x2 (lower-cased),
    big x1 (replicas defaults to 1), as its cluster spec would give a RayCluster."""
    job = RayObject(rayservice())
    (create,) = reconcile(job, None, FLAVORS)
    assert isinstance(create, CreateWorkload)
    manifest = create.manifest
    assert manifest["metadata"]["name"] == workload_name_for_owner("RayService", "ray.io", "rs", "u3")
    assert manifest["metadata"]["name"].startswith("rayservice-rs-")
    assert [(p["name"], p["count"]) for p in manifest["spec"]["podSets"]] == [("head", 1), ("small", 2), ("big", 1)]
    assert manifest["metadata"]["ownerReferences"][0] == {
        "apiVersion": "ray.io/v1", "kind": "RayService", "name": "rs", "uid": "u3", "controller": True,
        "blockOwnerDeletion": True}


def test_a_running_rayservice_without_workload_is_suspended_in_its_cluster_spec() -> None:
    (suspend, note, create) = reconcile(RayObject(rayservice(suspend=False)), None, FLAVORS)
    assert suspend == Patch("RayService", "ns", "rs", {"spec": {"rayClusterConfig": {"suspend": True}}})
    assert isinstance(note, Note) and isinstance(create, CreateWorkload)
    # nothing there means running too (KubeRay's default)
    assert not RayObject(rayservice(suspend=None)).is_suspended()


def test_admission_starts_its_cluster_spec_and_eviction_restores_it() -> None:
    """big on gpu: rayClusterConfig.suspend false, big's template zone=a plus gpu=h100 and the toleration;
    the RayService's spec has no suspend of its own. Evicted: suspended again, every template as created."""
    job = RayObject(rayservice())
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "gpu", 1)])
    (start, _) = reconcile(job, wl, FLAVORS)
    assert isinstance(start, Replace) and start.kind == "RayService"
    cluster = start.obj["spec"]["rayClusterConfig"]
    assert cluster["suspend"] is False and "suspend" not in start.obj["spec"]
    assert cluster["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert cluster["workerGroupSpecs"][1]["template"]["spec"]["nodeSelector"] == {"zone": "a", "gpu": "h100"}
    running = start.obj
    evicted = {"metadata": wl["metadata"], "spec": job.build_workload()["spec"],
               "status": {"conditions": [{"type": "QuotaReserved", "status": "False"},
                                         {"type": "Evicted", "status": "True"}]}}
    (restore, _) = reconcile(RayObject(running), evicted, FLAVORS)
    assert isinstance(restore, Replace) and restore.change is not None
    assert restore.change(copy.deepcopy(running))["spec"] == rayservice()["spec"]


def test_it_is_ready_and_active_by_its_ready_condition_and_never_finishes() -> None:
    """Upstream's PodsReady and IsActive read the Ready condition; Finished is always (Running, false, false)."""
    running = rayservice(suspend=False)
    job = RayObject(running)
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "cpu", 1)])
    assert not job.pods_ready() and not job.is_active()
    (waiting,) = reconcile(job, wl, FLAVORS, wait_for_pods_ready=True)
    assert waiting == WorkloadConditions("ns", job.workload_name(), (
        ("PodsReady", False, "WaitForStart", "Not all pods are ready or succeeded"),))
    running["status"] = READY
    assert RayObject(running).pods_ready() and RayObject(running).is_active()
    (ready,) = reconcile(RayObject(running), wl, FLAVORS, wait_for_pods_ready=True)
    assert isinstance(ready, WorkloadConditions) and ready.conditions[0][:3] == ("PodsReady", True, "Started")
    assert RayObject(running).finished() == (False, False, "")


def test_the_cluster_a_rayservice_makes_is_its_own_not_queued_again() -> None:
    owned = raycluster(ownerReferences=[{"apiVersion": "ray.io/v1", "kind": "RayService", "name": "rs",
                                         "uid": "u3", "controller": True}])
    assert not is_managed(owned, True)
    assert is_managed(rayservice(), False) and not is_managed(rayservice(labels={}), False)
    out = admission.mutator("RayCluster", ("ray.io/raycluster", "ray.io/rayservice"), True)(_review(owned))
    assert out["allowed"] and "patch" not in out


def _review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {"uid": "r1", "operation": operation, "namespace": "ns", "object": obj}


def _patch(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else None


def test_the_webhook_suspends_its_cluster_spec_on_create() -> None:
    mutate = admission.mutator("RayService", ("ray.io/rayservice",), False)
    assert _patch(mutate(_review(rayservice(None)))) == [
        {"op": "add", "path": "/spec/rayClusterConfig/suspend", "value": True}]
    assert _patch(mutate(_review(rayservice(True)))) is None  # already suspended
    assert _patch(mutate(_review(rayservice(None), "UPDATE"))) is None
    assert _patch(mutate(_review(rayservice(None, labels={})))) is None  # not Kueue's
    assert _patch(admission.mutator("RayService", ("ray.io/raycluster",), False)(_review(rayservice(None)))) is None


def test_the_webhook_holds_its_cluster_spec_to_a_rayclusters_rules() -> None:
    """Autoscaling without the elastic-job annotation is refused, reported at spec.rayClusterSpec (Go's
    field, as upstream's webhook names it); a running RayService keeps its queue; one Kueue does not
    queue is not checked."""
    auto = rayservice()
    auto["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    errors = ray_update.validate_create(auto, False)
    assert [(e.path, e.message) for e in errors] == [(
        "spec.rayClusterSpec.enableInTreeAutoscaling",
        "Invalid value: true: a kueue managed job can use autoscaling only when the "
        "ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job")]
    elastic = copy.deepcopy(auto)
    elastic["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    assert ray_update.validate_create(elastic, False) == []
    unqueued = copy.deepcopy(auto)
    unqueued["metadata"]["labels"] = {}
    assert ray_update.validate_create(unqueued, False) == []
    old, new = rayservice(False), rayservice(False)
    new["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "other"}
    assert [e.path for e in ray_update.validate_update(old, new, False, lambda _ns: False)] == [
        "metadata.labels[kueue.x-k8s.io/queue-name]"]
    old["spec"]["rayClusterConfig"]["suspend"] = new["spec"]["rayClusterConfig"]["suspend"] = True
    assert ray_update.validate_update(old, new, False, lambda _ns: False) == []
    answer = admission.validator_for_jobs("RayService", ("ray.io/rayservice",))(_review(auto))
    assert answer["allowed"] is False and answer["status"]["code"] == 403


def test_its_hooks_are_registered_only_for_its_framework() -> None:
    assert "mrayservice.kb.io" not in [h.name for h in names.mutating_for(("ray.io/raycluster",))]
    assert [h.path for h in names.mutating_for(("ray.io/rayservice",)) if h.kind == "RayService"] == [
        "/mutate-ray-io-v1-rayservice"]
    assert [h.path for h in names.validating_jobs_for(("ray.io/rayservice",))] == ["/validate-ray-io-v1-rayservice"]


def test_a_rayservice_queued_where_multikueue_dispatches_keeps_its_managed_by() -> None:
    """MultiKueue has no RayService adapter here: its spec.managedBy is never defaulted to MultiKueue's
    (a RayJob's in the same queue is), so KubeRay still runs it where it was created."""
    mutate = admission.mutator("RayService", ("ray.io/rayservice", "ray.io/rayjob"), False,
                               dispatches=lambda _ns, _q: True)
    assert _patch(mutate(_review(rayservice(None)))) == [
        {"op": "add", "path": "/spec/rayClusterConfig/suspend", "value": True}]
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj", "namespace": "ns", "labels": {
        "kueue.x-k8s.io/queue-name": "lq"}}, "spec": {"suspend": True, "rayClusterSpec": _cluster_spec()}}
    ops = _patch(admission.mutator("RayJob", ("ray.io/rayjob",), False, dispatches=lambda _ns, _q: True)(_review(job)))
    assert ops is not None and any(op["path"] == "/spec/managedBy" for op in ops)
