"""JobSet on the job framework (``pykueue.jobs.jobset.workload``, ``pykueue.jobs.jobset.generic``), its webhooks and
the controller's keys for it. Each expectation is worked out by hand from upstream's jobset integration
(PodSets, RunWithPodSetsInfo, RestorePodSetsInfo, Finished, PodsReady, ReclaimablePods, IsActive, the
webhook's Default and ValidateCreate/ValidateUpdate)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.controller.jobs.reconciler import JobKeys, ObjectKeys, Rules
from pykueue.controller.webhooks import admission, names
from pykueue.jobs import managed, registry
from pykueue.jobs.framework import CreateWorkload, Note, Patch, Replace, WorkloadConditions
from pykueue.jobs.framework.podset import PodSetInfoError, pod_set_info_from_flavors
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.jobset import workload as jobset
from pykueue.jobs.jobset.generic import JobSetObject, with_pod_sets_info
from pykueue.jobs.registry import BY_KIND
from tests.jobs.kind_objects import FLAVORS, TOLERATION, admitted, patch, request
from tests.jobs.writes import reconcile

FRAMEWORKS = ("batch/job", jobset.FRAMEWORK)


def _replicated(name: str, cpu: str, replicas: int | None = None, **job_spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "template": {"spec": {**job_spec, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": name, "image": "busybox",
                                                  "resources": {"requests": {"cpu": cpu}}}]}}}}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def js(suspend: bool | None = True, status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """driver: 1 replica (replicas defaulted) of 1 pod; workers: 3 replicas of parallelism 4 but
    completions 2, so 2 pods each (6 pods); ps: 2 replicas of parallelism 2 (completions unset: 2 pods
    each, 4 pods) with a zone selector of its own."""
    spec: dict[str, Any] = {"replicatedJobs": [
        _replicated("driver", "1"),
        _replicated("workers", "2", 3, parallelism=4, completions=2),
        _replicated("ps", "500m", 2, parallelism=2),
    ]}
    spec["replicatedJobs"][2]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    if suspend is not None:
        spec["suspend"] = suspend
    obj = {"apiVersion": jobset.API_VERSION, "kind": "JobSet",
           "metadata": {"name": "js", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                        "labels": {"kueue.x-k8s.io/queue-name": "lq"}, **meta},
           "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


ASSIGNED = [("driver", "cpu", 1), ("workers", "gpu", 6), ("ps", "cpu", 4)]


# ---- the Workload ----------------------------------------------------------------------------------


def test_a_jobset_is_one_workload_with_a_pod_set_per_replicated_job() -> None:
    """Named jobset-js-<hash>, owned by the JobSet; pod sets driver x1, workers x6 (3 x min(4, 2)),
    ps x4 (2 x 2), each with its Job's pod template."""
    (create,) = reconcile(JobSetObject(js()), None, FLAVORS)
    assert isinstance(create, CreateWorkload)
    manifest = create.manifest
    assert manifest["metadata"]["name"] == workload_name_for_owner("JobSet", "jobset.x-k8s.io", "js", "u1")
    assert manifest["metadata"]["name"].startswith("jobset-js-")
    assert [(p["name"], p["count"]) for p in manifest["spec"]["podSets"]] == [("driver", 1), ("workers", 6), ("ps", 4)]
    assert manifest["spec"]["podSets"][2]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert "minCount" not in manifest["spec"]["podSets"][1]  # no partial admission for a JobSet
    assert manifest["spec"]["queueName"] == "lq"
    assert manifest["metadata"]["ownerReferences"] == [{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u1", "controller": True,
        "blockOwnerDeletion": True}]


def test_priority_comes_from_the_label_else_the_first_template_naming_a_class() -> None:
    obj = js()
    obj["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    assert jobset.workload_from_jobset(obj)["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    assert jobset.priority_class_path(obj) == "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName"
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    assert jobset.workload_from_jobset(obj)["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "urgent"}


def test_topology_annotations_give_a_request_grouped_by_job_index() -> None:
    obj = js()
    template = obj["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    template["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}}
    request = jobset.pod_sets(obj)[1]["topologyRequest"]
    assert request == {"required": "rack", "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                       "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index", "subGroupCount": 3}


def test_what_cannot_become_a_workload_is_named_by_its_field_path() -> None:
    obj = js()
    obj["spec"]["replicatedJobs"][1]["name"] = "driver"
    del obj["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["spec"]["containers"]
    assert [(e.path, e.message) for e in jobset.validate(obj)] == [
        ("spec.replicatedJobs[1].name", 'Duplicate value: "driver"'),
        ("spec.replicatedJobs[2].template.spec.template.spec.containers", "Required value")]
    assert [e.path for e in jobset.validate({"kind": "JobSet", "metadata": {"name": "x"}, "spec": {}})] == [
        "spec.replicatedJobs"]


# ---- start, stop, status ---------------------------------------------------------------------------


def test_a_running_jobset_without_workload_is_suspended_first() -> None:
    (suspend, note, create) = reconcile(JobSetObject(js(suspend=False)), None, FLAVORS)
    assert suspend == Patch("JobSet", "ns", "js", {"spec": {"suspend": True}})
    assert isinstance(note, Note) and isinstance(create, CreateWorkload)


def test_admission_starts_it_with_each_flavor_in_its_replicated_jobs_template() -> None:
    """driver and ps on cpu, workers on gpu: suspend false; each pod template gets its flavor's node
    labels (ps keeps its zone=a), workers the GPU toleration, each the podset and queue labels."""
    job = JobSetObject(js())
    (start, note) = reconcile(job, admitted(job.workload_name(), ASSIGNED), FLAVORS)
    assert isinstance(start, Replace) and start.kind == "JobSet" and isinstance(note, Note)
    assert start.obj["spec"]["suspend"] is False
    driver, workers, ps = (r["template"]["spec"]["template"] for r in start.obj["spec"]["replicatedJobs"])
    assert driver["spec"]["nodeSelector"] == {"pool": "cpu"} and "tolerations" not in driver["spec"]
    assert workers["spec"]["nodeSelector"] == {"gpu": "h100"} and workers["spec"]["tolerations"] == [TOLERATION]
    assert ps["spec"]["nodeSelector"] == {"zone": "a", "pool": "cpu"}
    queues = {"kueue.x-k8s.io/local-queue-name": "", "kueue.x-k8s.io/cluster-queue-name": "cq"}
    assert workers["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "workers", **queues}
    assert start.obj["metadata"]["resourceVersion"] == "7"  # guarded by the cached copy


def test_eviction_suspends_it_and_restores_the_templates_the_workload_recorded() -> None:
    job = JobSetObject(js())
    wl = admitted(job.workload_name(), ASSIGNED)
    started = reconcile(job, wl, FLAVORS)[0].obj
    evicted = {"metadata": wl["metadata"], "spec": job.build_workload()["spec"],
               "status": {"conditions": [{"type": "QuotaReserved", "status": "False"},
                                         {"type": "Evicted", "status": "True"}]}}
    (restore, note) = reconcile(JobSetObject(started), evicted, FLAVORS)
    assert isinstance(restore, Replace) and restore.obj is None and restore.change is not None
    restored = restore.change(copy.deepcopy(started))
    assert restored["spec"] == js()["spec"]  # suspended, every template as created
    assert reconcile(JobSetObject(restored), evicted, FLAVORS) == []


def test_pods_ready_counts_ready_and_succeeded_jobs_against_all_replicas() -> None:
    """1 + 3 + 2 = 6 replica Jobs: 5 ready is WaitForStart; 4 ready and 2 succeeded is Started."""
    status = {"replicatedJobsStatus": [{"name": "driver", "ready": 1}, {"name": "workers", "ready": 3},
                                       {"name": "ps", "ready": 1, "active": 2}]}
    running = js(suspend=False, status=status)
    job = JobSetObject(running)
    wl = admitted(job.workload_name(), ASSIGNED)
    assert reconcile(job, wl, FLAVORS, wait_for_pods_ready=True) == [WorkloadConditions("ns", job.workload_name(), (
        ("PodsReady", False, "WaitForStart", "Not all pods are ready or succeeded"),))]
    status["replicatedJobsStatus"][2] = {"name": "ps", "succeeded": 2}
    status["replicatedJobsStatus"][1] = {"name": "workers", "ready": 3}
    ready = JobSetObject(running)
    assert ready.pods_ready() and not ready.is_active()
    assert JobSetObject(js(status={"replicatedJobsStatus": [{"name": "ps", "active": 1}]})).is_active()


def test_succeeded_replicas_free_their_pods_and_the_conditions_finish_it() -> None:
    """ReclaimablePods: 2 succeeded workers Jobs of 2 pods each free 4; 1 succeeded ps Job of 2 pods
    frees 2. Completed finishes the Workload Succeeded with its message, Failed as Failed."""
    status = {"replicatedJobsStatus": [{"name": "workers", "succeeded": 2}, {"name": "ps", "succeeded": 1}]}
    job = JobSetObject(js(suspend=False, status=status))
    assert job.reclaimable_pods() == {"workers": 4, "ps": 2}
    done = js(suspend=False, status={"conditions": [{"type": "Completed", "status": "True", "message": "jobs done"}]})
    wl = admitted(JobSetObject(done).workload_name(), ASSIGNED)
    (finish,) = reconcile(JobSetObject(done), wl, FLAVORS)
    assert finish == WorkloadConditions("ns", wl["metadata"]["name"], (("Finished", True, "Succeeded", "jobs done"),))
    failed = js(status={"conditions": [{"type": "Completed", "status": "False"},
                                       {"type": "Failed", "status": "True", "message": "backoff"}]})
    assert JobSetObject(failed).finished() == (True, False, "backoff")


def test_wrong_number_of_infos_is_refused() -> None:
    with pytest.raises(PodSetInfoError, match="expecting 3 podsets, got 1"):
        with_pod_sets_info(js(), [pod_set_info_from_flavors([], name="driver")], restore=False)


# ---- children and keys -----------------------------------------------------------------------------


def _child_job() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "js-workers-0", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "ownerReferences": [{"apiVersion": jobset.API_VERSION, "kind": "JobSet", "name": "js",
                                              "uid": "u1", "controller": True}]},
            "spec": {"suspend": True, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def test_a_jobsets_child_jobs_are_never_queued_themselves() -> None:
    """While the integration is on, a Job whose controller is a JobSet is its child (upstream's
    IsOwnerManagedByKueue): no Workload of its own, even with a queue label; with it off, it is a Job."""
    on = Rules(frameworks=registry.enabled(FRAMEWORKS))
    assert managed.managed_owner(_child_job(), on.frameworks) is not None
    assert JobKeys({"ns/js-workers-0": _child_job()}, on).load("ns/js-workers-0") is None
    off = Rules(frameworks=registry.enabled(("batch/job",)))
    assert JobKeys({"ns/js-workers-0": _child_job()}, off).load("ns/js-workers-0") is not None


def test_the_keys_find_the_jobset_and_the_workloads_owner() -> None:
    keys = ObjectKeys(BY_KIND["JobSet"], {"ns/js": js(), "ns/plain": js(name="plain", labels={})}, Rules())
    assert isinstance(keys.load("ns/js"), JobSetObject)
    assert keys.load("ns/plain") is None  # no queue name, manageJobsWithoutQueueName off
    wl = {"metadata": {"namespace": "ns", "ownerReferences": [
        {"apiVersion": jobset.API_VERSION, "kind": "JobSet", "name": "js"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j"}]}}
    assert keys.keys_for_workload(wl) == ["ns/js"]


# ---- webhooks --------------------------------------------------------------------------------------


def test_the_mutating_webhook_suspends_a_queued_jobset_and_defaults_its_queue() -> None:
    mutate = admission.mutator("JobSet", FRAMEWORKS, False, lambda ns: ns == "ns")
    assert patch(mutate(request(js(suspend=False)))) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    unlabelled = js(suspend=False, labels={})
    assert patch(mutate(request(unlabelled))) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
        {"op": "add", "path": "/spec/suspend", "value": True}]
    # the integration off: let through unchanged
    assert patch(admission.mutator("JobSet", ("batch/job",), False)(request(js(suspend=False)))) == []


def test_the_validating_webhook_refuses_a_bad_queue_name_and_a_queue_change_while_running() -> None:
    validate = admission.validator_for_jobs("JobSet", FRAMEWORKS)
    bad = js(labels={"kueue.x-k8s.io/queue-name": "Not_A_Name"})
    refused = validate(request(bad))
    assert refused["allowed"] is False
    assert "metadata.labels[kueue.x-k8s.io/queue-name]" in refused["status"]["message"]
    running = js(suspend=False)
    moved = copy.deepcopy(running)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    refused = validate(request(moved, "UPDATE", running))
    assert refused["allowed"] is False and "field is immutable" in refused["status"]["message"]
    suspended, moved_suspended = js(), copy.deepcopy(js())
    moved_suspended["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    assert validate(request(moved_suspended, "UPDATE", suspended))["allowed"] is True


def test_the_hooks_are_registered_only_with_the_integration() -> None:
    assert "mjobset.kb.io" in [h.name for h in names.mutating_for(FRAMEWORKS)]
    assert "mjobset.kb.io" not in [h.name for h in names.mutating_for(("batch/job",))]
    (hook,) = [h for h in names.validating_jobs_for(FRAMEWORKS) if h.kind == "JobSet"]
    assert hook.path == "/validate-jobset-x-k8s-io-v1alpha2-jobset" and hook.resources == ("jobsets",)


def _child(name: str, owner_uid: str, **status: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": "ns", "ownerReferences": [{
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train", "uid": owner_uid,
            "controller": True}]}, "status": status}


def test_a_stopped_jobsets_terminating_pods_keep_it_active_until_they_are_gone() -> None:
    """Issue 51 item 7 for JobSets: suspended, JobSet's status counts no active Job, but a child Job
    still has 2 pods terminating (their grace period): the JobSet is active until its Jobs say 0; a Job
    of a predecessor JobSet under the name (another UID) is not its."""
    keys = ObjectKeys(BY_KIND["JobSet"], {}, Rules(frameworks=FRAMEWORKS))
    stopped = js(suspend=True, status={"replicatedJobsStatus": [{"name": "workers", "active": 0}]})
    stopped["metadata"]["name"], stopped["metadata"]["uid"] = "train", "js-1"
    assert keys.child(_child("train-workers-0", "js-1", active=0, terminating=2), deleted=False) == "ns/train"
    assert keys.child(_child("old-workers-0", "js-0", active=1), deleted=False) == "ns/train"
    assert keys.child({"metadata": {"name": "plain", "namespace": "ns"}}, deleted=False) is None
    assert keys.wrap(stopped).is_active()
    keys.child(_child("train-workers-0", "js-1", active=0, terminating=0), deleted=False)
    assert not keys.wrap(stopped).is_active()  # the predecessor's Job does not count for it
    keys.child(_child("train-workers-0", "js-1"), deleted=True)
    keys.child(_child("old-workers-0", "js-0"), deleted=True)
    assert keys.children == {}
