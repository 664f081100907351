"""RayCluster and RayJob on the job framework (``pykueue.jobs.ray.generic``), their webhook, and the
controller's keys for them. Each expectation is worked out by hand from upstream's raycluster and
rayjob integrations (RunWithPodSetsInfo, RestorePodSetsInfo, Finished, PodsReady, the webhooks'
Default)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from pykueue.controller.jobs.reconciler import ObjectKeys
from pykueue.controller.webhooks import admission, names
from pykueue.jobs.framework import (
    CreateWorkload,
    Delete,
    Note,
    Patch,
    Replace,
    Warn,
    WorkloadConditions,
    mismatch,
)
from pykueue.jobs.framework.podset import (
    PodSetInfoError,
    pod_set_info_from_flavors,
    pod_set_info_from_pod_set,
)
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.ray.generic import RayObject, is_managed, with_pod_sets_info
from pykueue.jobs.registry import BY_KIND
from tests.jobs.kind_objects import FLAVORS, TOLERATION, admitted
from tests.jobs.writes import reconcile


def _template(cpu: str, **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray",
                                     "resources": {"requests": {"cpu": cpu}}}], **spec}}


def _cluster_spec() -> dict[str, Any]:
    return {"headGroupSpec": {"template": _template("1")},
            "workerGroupSpecs": [{"groupName": "Small", "replicas": 2, "template": _template("2")},
                                 {"groupName": "big", "template": _template("4", nodeSelector={"zone": "a"})}]}


def raycluster(suspend: bool | None = True, **meta: Any) -> dict[str, Any]:
    spec = _cluster_spec()
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}, **meta},
            "spec": spec}


def rayjob(suspend: bool = True, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": "ns", "uid": "u2", "resourceVersion": "9",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": suspend, "shutdownAfterJobFinishes": True, "entrypoint": "python x.py",
                     "rayClusterSpec": _cluster_spec(), **spec},
            "status": status or {}}


# ---- RayCluster ----------------------------------------------------------------------------------------


def test_a_raycluster_without_workload_gets_one_with_head_and_worker_pod_sets() -> None:
    """Suspended by the webhook: only the Workload is created, named raycluster-rc-<hash> and owned by
    the RayCluster; pod sets head x1, small x2 (the group name lower-cased), big x1."""
    job = RayObject(raycluster())
    (create,) = reconcile(job, None, FLAVORS)
    assert isinstance(create, CreateWorkload)
    manifest = create.manifest
    assert manifest["metadata"]["name"] == workload_name_for_owner("RayCluster", "ray.io", "rc", "u1")
    assert manifest["metadata"]["name"].startswith("raycluster-rc-")
    assert [(p["name"], p["count"]) for p in manifest["spec"]["podSets"]] == [("head", 1), ("small", 2), ("big", 1)]
    assert manifest["metadata"]["ownerReferences"][0] == {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "u1", "controller": True,
        "blockOwnerDeletion": True}


def test_a_running_raycluster_without_workload_is_suspended_first() -> None:
    (suspend, note, create) = reconcile(RayObject(raycluster(suspend=False)), None, FLAVORS)
    assert suspend == Patch("RayCluster", "ns", "rc", {"spec": {"suspend": True}})
    assert isinstance(note, Note) and isinstance(create, CreateWorkload)


def test_admission_starts_it_with_each_flavor_in_its_own_template() -> None:
    """head and small on cpu, big on gpu: suspend false; head and small get pool=cpu; big keeps its
    zone=a and gets gpu=h100 and the GPU toleration; each template the podset label of its pod set."""
    job = RayObject(raycluster())
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "gpu", 1)])
    (start, note) = reconcile(job, wl, FLAVORS)
    assert isinstance(start, Replace) and start.kind == "RayCluster" and isinstance(note, Note)
    spec = start.obj["spec"]
    assert spec["suspend"] is False
    head = spec["headGroupSpec"]["template"]
    small, big = (g["template"] for g in spec["workerGroupSpecs"])
    assert head["spec"]["nodeSelector"] == {"pool": "cpu"} and "tolerations" not in head["spec"]
    # upstream's AssignQueueLabelsForPods: the Workload's LocalQueue (none here) and ClusterQueue
    queues = {"kueue.x-k8s.io/local-queue-name": "", "kueue.x-k8s.io/cluster-queue-name": "cq"}
    assert head["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "head", **queues}
    assert small["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert small["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "small", **queues}
    assert big["spec"]["nodeSelector"] == {"zone": "a", "gpu": "h100"}
    assert big["spec"]["tolerations"] == [TOLERATION]
    assert start.obj["metadata"]["resourceVersion"] == "5"  # the write is guarded by the cached copy


def test_eviction_suspends_it_and_restores_the_templates_the_workload_recorded() -> None:
    job = RayObject(raycluster())
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "gpu", 1)])
    started = reconcile(job, wl, FLAVORS)[0].obj
    evicted = {"metadata": wl["metadata"], "spec": job.build_workload()["spec"],
               "status": {"conditions": [{"type": "QuotaReserved", "status": "False"},
                                         {"type": "Evicted", "status": "True"}]}}
    (restore, note) = reconcile(RayObject(started), evicted, FLAVORS)
    assert isinstance(restore, Replace) and restore.obj is None and restore.change is not None
    restored = restore.change(copy.deepcopy(started))
    assert restored["spec"] == raycluster()["spec"]  # suspended, every template as created
    # already suspended: nothing more to do
    assert reconcile(RayObject(restored), evicted, FLAVORS) == []


def test_pods_ready_follows_the_cluster_state_and_a_raycluster_never_finishes() -> None:
    """Under waitForPodsReady: not ready yet is WaitForStart, KubeRay's ``ready`` state is Started.
    Without it Kueue writes no PodsReady condition at all (upstream's step 5 is behind the option)."""
    running = raycluster(suspend=False)
    job = RayObject(running)
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "cpu", 1)])
    assert reconcile(job, wl, FLAVORS, wait_for_pods_ready=True) == [WorkloadConditions("ns", job.workload_name(), (
        ("PodsReady", False, "WaitForStart", "Not all pods are ready or succeeded"),))]
    running["status"] = {"state": "ready"}
    assert reconcile(RayObject(running), wl, FLAVORS) == []
    (ready,) = reconcile(RayObject(running), wl, FLAVORS, wait_for_pods_ready=True)
    assert ready == WorkloadConditions("ns", job.workload_name(), (
        ("PodsReady", True, "Started", "All pods reached readiness and the workload is running"),))
    running["status"] = {"state": "failed", "reason": "boom"}
    assert RayObject(running).finished() == (False, False, "")


def test_wrong_number_of_infos_is_refused() -> None:
    with pytest.raises(PodSetInfoError, match="expecting 3 podsets, got 1"):
        with_pod_sets_info(raycluster(), [pod_set_info_from_flavors([], name="head")], restore=False)


# ---- RayJob ------------------------------------------------------------------------------------------


def test_a_rayjob_starts_with_its_submitter_template_and_finishes_with_its_deployment() -> None:
    """K8sJobMode with a submitterPodTemplate: four pod sets; the submitter's template gets the
    flavor too. jobDeploymentStatus Complete with jobStatus SUCCEEDED finishes the Workload as
    Succeeded with the RayJob's message."""
    job_obj = rayjob(submitterPodTemplate=_template("500m", restartPolicy="Never"))
    job = RayObject(job_obj)
    assert job.workload_name().startswith("rayjob-rj-")
    pod_sets = job.build_workload()["spec"]["podSets"]
    assert [(p["name"], p["count"]) for p in pod_sets] == [("head", 1), ("small", 2), ("big", 1), ("submitter", 1)]
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "cpu", 1),
                                        ("submitter", "gpu", 1)])
    start = reconcile(job, wl, FLAVORS)[0].obj
    assert start["spec"]["suspend"] is False
    assert start["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert start["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {"gpu": "h100"}
    assert start["spec"]["submitterPodTemplate"]["spec"]["tolerations"] == [TOLERATION]

    start["status"] = {"jobDeploymentStatus": "Running", "rayClusterStatus": {"state": "ready"}}
    (ready,) = reconcile(RayObject(start), wl, FLAVORS, wait_for_pods_ready=True)
    assert isinstance(ready, WorkloadConditions) and ready.conditions[0][:3] == ("PodsReady", True, "Started")
    start["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "all done"}
    (finish,) = reconcile(RayObject(start), wl, FLAVORS)
    assert finish == WorkloadConditions("ns", job.workload_name(), (("Finished", True, "Succeeded", "all done"),))


def test_a_failed_rayjob_finishes_its_workload_as_failed() -> None:
    job = RayObject(rayjob(suspend=False, status={"jobDeploymentStatus": "Failed", "jobStatus": "FAILED",
                                                  "message": "exit 1"}))
    assert job.finished() == (True, False, "exit 1")
    # Running is not finished whatever the job's status
    assert RayObject(rayjob(status={"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED"})).finished() == (
        False, False, "")


def test_the_default_submitter_gets_its_flavors_placement() -> None:
    """No submitterPodTemplate: admission writes out KubeRay's default submitter (the head's image,
    500m cpu and 200Mi requested, restartPolicy Never) with the submitter pod set's flavor merged in,
    so the submitter Job runs on the gpu flavor's nodes with its toleration. Eviction restores it to
    the Workload's recorded default: no flavor left in it."""
    job = RayObject(rayjob())
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "cpu", 1),
                                        ("submitter", "gpu", 1)])
    start = reconcile(job, wl, FLAVORS)[0].obj
    submitter = start["spec"]["submitterPodTemplate"]
    assert submitter["spec"]["nodeSelector"] == {"gpu": "h100"}
    assert submitter["spec"]["tolerations"] == [TOLERATION]
    assert submitter["spec"]["restartPolicy"] == "Never"
    (container,) = submitter["spec"]["containers"]
    assert (container["name"], container["image"]) == ("ray-job-submitter", "rayproject/ray")
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    assert submitter["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "submitter"
    assert submitter["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] == wl["status"]["admission"]["clusterQueue"]
    # the Workload made from the started RayJob is the one admitted: the same pod sets and requests
    assert mismatch(RayObject(start), RayObject(start).build_workload(), {**wl, "spec": job.build_workload()["spec"]}) is None
    stopped = with_pod_sets_info(start, [pod_set_info_from_pod_set(p) for p in job.build_workload()["spec"]["podSets"]],
                                 restore=True)
    assert "nodeSelector" not in stopped["spec"]["submitterPodTemplate"]["spec"]
    assert "tolerations" not in stopped["spec"]["submitterPodTemplate"]["spec"]
    # HTTPMode: no submitter pod set at all, three infos, and no submitter template written
    http = RayObject(rayjob(submissionMode="HTTPMode"))
    assert [p["name"] for p in http.build_workload()["spec"]["podSets"]] == ["head", "small", "big"]
    started = reconcile(http, admitted(http.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2),
                                                              ("big", "cpu", 1)]), FLAVORS)[0].obj
    assert "submitterPodTemplate" not in started["spec"]


def test_a_rayjob_kuberay_found_invalid_finishes_and_holds_nothing() -> None:
    """jobDeploymentStatus ValidationFailed: KubeRay will never run it, so its Workload finishes Failed
    with KubeRay's message (its quota goes), and nothing of it is active."""
    job = RayObject(rayjob(status={"jobDeploymentStatus": "ValidationFailed", "message": "bad spec"}))
    assert job.finished() == (True, False, "bad spec")
    assert not job.is_active()
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "cpu", 1),
                                        ("submitter", "gpu", 1)])
    assert reconcile(job, wl, FLAVORS) == [WorkloadConditions("ns", job.workload_name(), (
        ("Finished", True, "Failed", "bad spec"),))]


# ---- who is managed, the webhook, the controller's keys ------------------------------------------------


def test_managed_needs_a_queue_and_not_a_rayjob_owner() -> None:
    assert is_managed(raycluster(), False)
    unlabelled = raycluster(labels={})
    assert not is_managed(unlabelled, False) and is_managed(unlabelled, True)
    owned = raycluster(ownerReferences=[{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj",
                                         "uid": "u2", "controller": True}])
    assert not is_managed(owned, True)
    selector_only = rayjob(clusterSelector={"ray.io/cluster": "shared"})
    del selector_only["spec"]["rayClusterSpec"]
    assert not is_managed(selector_only, True)


def _review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {"uid": "r1", "operation": operation, "namespace": "ns", "object": obj}


def _patch(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else None


@pytest.mark.parametrize("kind,framework,make", [("RayCluster", "ray.io/raycluster", lambda: raycluster(None)),
                                                 ("RayJob", "ray.io/rayjob", lambda: rayjob(False))])
def test_the_webhook_suspends_a_managed_ray_object_on_create(kind: str, framework: str, make) -> None:
    mutate = admission.mutator(kind, (framework,), False)
    out = mutate(_review(make()))
    assert out["allowed"] and _patch(out) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert _patch(mutate(_review(make(), "UPDATE"))) is None
    unlabelled = make()
    unlabelled["metadata"]["labels"] = {}
    assert _patch(mutate(_review(unlabelled))) is None
    assert _patch(admission.mutator(kind, (framework,), True)(_review(unlabelled))) == [
        {"op": "add", "path": "/spec/suspend", "value": True}]
    # the integration off: let through as sent
    assert _patch(admission.mutator(kind, ("batch/job",), True)(_review(make()))) is None


def test_the_webhook_leaves_a_rayjobs_own_cluster_alone() -> None:
    owned = raycluster(None, ownerReferences=[{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj",
                                               "uid": "u2", "controller": True}])
    out = admission.mutator("RayCluster", ("ray.io/raycluster", "ray.io/rayjob"), True)(_review(owned))
    assert out["allowed"] and _patch(out) is None


def test_ray_hooks_are_registered_only_for_their_frameworks() -> None:
    assert [h.name for h in names.mutating_for(("batch/job",))] == ["mjob.kb.io"]
    assert [h.path for h in names.mutating_for(("ray.io/raycluster", "ray.io/rayjob"))] == [
        "/mutate-batch-v1-job", "/mutate-ray-io-v1-rayjob", "/mutate-ray-io-v1-raycluster"]  # the registry's order


def test_ray_keys_find_the_object_and_the_workloads_owner() -> None:
    store = {"ns/rc": raycluster(), "ns/plain": raycluster(labels={})}
    keys = ObjectKeys(BY_KIND["RayCluster"], store, False)
    found = keys.load("ns/rc")
    assert isinstance(found, RayObject) and found.describe() == "RayCluster ns/rc"
    assert keys.load("ns/plain") is None and keys.load("ns/missing") is None
    wl = {"metadata": {"namespace": "ns", "ownerReferences": [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc"},
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j"}]}}
    assert keys.keys_for_workload(wl) == ["ns/rc"]
    assert ObjectKeys(BY_KIND["RayJob"], {}, False).keys_for_workload(wl) == ["ns/rj"]


def test_an_object_upstreams_webhook_would_refuse_is_not_queued_and_says_why() -> None:
    """Created while the validating webhook was away: autoscaling on a managed RayCluster is reported
    (a warning naming the field, and a Warning event ErrWorkloadCompose on the RayCluster) and nothing
    is written, so it stays as the mutating webhook left it, suspended."""
    obj = raycluster()
    obj["spec"]["enableInTreeAutoscaling"] = True
    note, warn = reconcile(RayObject(obj), None, FLAVORS)
    assert isinstance(note, Note) and note.warning and note.message == "cannot be queued"
    assert note.fields["object"] == "RayCluster ns/rc"
    assert note.fields["error"].startswith("spec.enableInTreeAutoscaling: Invalid value: true")
    assert isinstance(warn, Warn) and warn.obj is obj and warn.reason == "ErrWorkloadCompose"
    assert warn.message == note.fields["error"]


def test_a_queued_object_changed_into_one_kueue_cannot_queue_warns_on_it_and_its_workload() -> None:
    """Its Workload exists (made while it was valid); turned on autoscaling while the webhook was away,
    it keeps that Workload untouched and a Warning event on the RayCluster and on the Workload says why."""
    obj = raycluster()
    wl = RayObject(obj).build_workload()
    wl["metadata"]["uid"] = "w1"
    obj["spec"]["enableInTreeAutoscaling"] = True
    actions = reconcile(RayObject(obj), wl, FLAVORS)
    warnings = [a for a in actions if isinstance(a, Warn)]
    assert [w.obj for w in warnings] == [obj, wl]
    assert {w.reason for w in warnings} == {"ErrWorkloadCompose"}
    assert warnings[0].message.startswith("spec.enableInTreeAutoscaling: Invalid value: true")
    assert not any(isinstance(a, (Delete, CreateWorkload, Replace)) for a in actions)


def test_an_evicted_rayjob_is_suspended_with_every_template_restored() -> None:
    """Head, workers and the submitterPodTemplate each get back what the Workload recorded: the big
    group its own zone=a selector, the others none; no flavor toleration is left anywhere."""
    created = rayjob(submitterPodTemplate=_template("500m", restartPolicy="Never"))
    job = RayObject(created)
    wl = admitted(job.workload_name(), [("head", "gpu", 1), ("small", "gpu", 2), ("big", "gpu", 1),
                                        ("submitter", "gpu", 1)])
    started = reconcile(job, wl, FLAVORS)[0].obj
    started["status"] = {"jobDeploymentStatus": "Running"}
    evicted = {"metadata": wl["metadata"], "spec": job.build_workload()["spec"],
               "status": {"conditions": [{"type": "Evicted", "status": "True"}]}}
    (restore, _) = reconcile(RayObject(started), evicted, FLAVORS)
    restored = restore.change(copy.deepcopy(started))
    assert restored["spec"] == created["spec"]


def test_a_running_rayclusters_grown_worker_group_stops_it_and_replaces_its_workload() -> None:
    """Upstream's EquivalentToWorkload, for every GenericJob: admitted for small x2, the running
    RayCluster now asks for small x3; it is suspended (templates restored) and its Workload deleted,
    to be made again for 3 workers."""
    before = raycluster(suspend=False)
    workload = admitted(RayObject(before).workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "gpu", 1)])
    workload["spec"] = RayObject(before).build_workload()["spec"]
    assert reconcile(RayObject(before), workload, FLAVORS) == []  # still equivalent: nothing to do
    grown = copy.deepcopy(before)
    grown["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    actions = reconcile(RayObject(grown), workload, FLAVORS)
    assert isinstance(actions[0], Replace) and actions[0].change is not None
    assert actions[0].change(copy.deepcopy(grown))["spec"]["suspend"] is True
    deleted = [a for a in actions if isinstance(a, Delete)]
    assert [(d.kind, d.name) for d in deleted] == [("Workload", workload["metadata"]["name"])]
    note = next(a for a in actions if isinstance(a, Note) and "replaced" in a.message)
    assert note.fields["why"] == "pod set small: count 3, the Workload's 2"


def test_a_suspended_rayjob_moved_to_another_queue_moves_its_workload() -> None:
    job = rayjob()
    workload = {"metadata": {"name": RayObject(job).workload_name(), "namespace": "ns"},
                "spec": RayObject(job).build_workload()["spec"], "status": {}}
    moved = copy.deepcopy(job)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    (patch, _) = reconcile(RayObject(moved), workload, FLAVORS)
    assert isinstance(patch, Patch) and (patch.kind, patch.body) == ("Workload", {"spec": {"queueName": "other"}})
