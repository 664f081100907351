"""PyTorchJob (``pykueue.jobs.pytorchjob``) over the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``):
its Workload, its GenericJob, its webhooks and its MultiKueue adapter. Each expectation is worked out by
hand from upstream's kubeflowjob (PodSets, OrderedReplicaTypes, PriorityClass, RunWithPodSetsInfo,
RestorePodSetsInfo, Finished, IsActive, PodsReady, ValidateOnCreate), the pytorchjob webhook and the
kubeflowjob MultiKueue adapter, and from the training-operator v1.9's PyTorchJob webhook."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.controller.webhooks import admission, names
from pykueue.jobs import pytorchjob, registry
from pykueue.jobs.framework import CreateWorkload, JobStopped, Note, Patch, Replace
from pykueue.jobs.framework.podset import PodSetInfoError, pod_set_info_from_flavors
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.kubeflow import workload
from pykueue.jobs.kubeflow.generic import TrainingJob, with_pod_sets_info
from tests.jobs.kind_objects import FLAVORS, TOLERATION, admitted, patch, request
from tests.jobs.kubeflow_objects import replica, training_job
from tests.jobs.writes import reconcile

KIND = pytorchjob.KIND
FRAMEWORKS = ("batch/job", "kubeflow.org/pytorchjob")
ASSIGNED = [("master", "cpu", 1), ("worker", "gpu", 3)]


def pt(suspend: bool | None = True, status: dict[str, Any] | None = None, run_policy: dict[str, Any] | None = None,
       **meta: Any) -> dict[str, Any]:
    """Worker written before Master (the map's order is not the pod sets'): 3 workers of 2 cpu with a zone
    selector of their own, 1 master of 1 cpu."""
    specs = {"Worker": replica("pytorch", "2", 3, nodeSelector={"zone": "a"}), "Master": replica("pytorch", "1", 1)}
    return training_job("kubeflow.org/v1", "PyTorchJob", "pytorchReplicaSpecs", specs, suspend=suspend,
                        status=status, run_policy=run_policy, **meta)


def job(obj: dict[str, Any]) -> TrainingJob:
    return registry.BY_KIND["PyTorchJob"].live.wrap(obj, [])


# ---- the Workload ----------------------------------------------------------------------------------


def test_a_pytorchjob_is_one_workload_with_master_then_worker() -> None:
    (create,) = reconcile(job(pt()), None, FLAVORS)
    assert isinstance(create, CreateWorkload)
    manifest = create.manifest
    assert manifest["metadata"]["name"] == workload_name_for_owner("PyTorchJob", "kubeflow.org", "train", "u1")
    assert manifest["metadata"]["name"].startswith("pytorchjob-train-")
    assert [(p["name"], p["count"]) for p in manifest["spec"]["podSets"]] == [("master", 1), ("worker", 3)]
    assert manifest["spec"]["podSets"][1]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert manifest["spec"]["queueName"] == "lq"
    assert manifest["metadata"]["ownerReferences"] == [{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train", "uid": "u1", "controller": True,
        "blockOwnerDeletion": True}]


def test_replicas_default_to_one_and_a_missing_type_is_no_pod_set() -> None:
    obj = pt()
    del obj["spec"]["pytorchReplicaSpecs"]["Master"]
    del obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    assert [(p["name"], p["count"]) for p in workload.pod_sets(KIND, obj)] == [("worker", 1)]
    assert workload.template_paths(KIND, obj) == ["spec.pytorchReplicaSpecs[Worker].template"]


def test_priority_the_label_then_the_scheduling_policy_then_the_first_template_in_order() -> None:
    obj = pt()
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "low"
    ref = workload.workload(KIND, obj)["spec"]["priorityClassRef"]
    assert ref == {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "low"}
    assert workload.priority_class_path(KIND, obj) == "spec.pytorchReplicaSpecs[Worker].template.spec.priorityClassName"
    obj["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": "top"}
    assert workload.workload(KIND, obj)["spec"]["priorityClassRef"]["name"] == "top"
    assert workload.priority_class_path(KIND, obj) == "spec.runPolicy.schedulingPolicy.priorityClass"
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "batch"
    assert workload.workload(KIND, obj)["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "batch"}
    assert workload.priority_class_path(KIND, obj) is None


def test_topology_annotations_give_a_request_indexed_by_the_replica_index() -> None:
    obj = pt()
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}}
    master, worker = workload.pod_sets(KIND, obj)
    assert "topologyRequest" not in master
    assert worker["topologyRequest"] == {"required": "rack", "podIndexLabel": "training.kubeflow.org/replica-index"}


def test_what_cannot_become_a_workload_is_named_by_its_field_path() -> None:
    """The operator's rules (a Chief is no PyTorchJob type, the Master is exactly one, each type has a
    container named pytorch with an image) and Kueue's (a topology annotation that parses)."""
    obj = pt()
    specs = obj["spec"]["pytorchReplicaSpecs"]
    specs["Master"]["replicas"] = 2
    specs["Chief"] = replica("pytorch", "1")
    specs["Worker"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    specs["Worker"]["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}}
    errors = [(e.path, e.message) for e in workload.validate(KIND, obj)]
    assert errors[:3] == [
        ("spec.pytorchReplicaSpecs[Worker].template.spec.containers",
         "Required value: must have at least one container with name pytorch"),
        ("spec.pytorchReplicaSpecs[Master].replicas", "Forbidden: must be 1"),
        ("spec.pytorchReplicaSpecs[Chief]", 'Unsupported value: "Chief": supported values: "Master", "Worker"')]
    path, message = errors[3]
    assert path == ("spec.pytorchReplicaSpecs[Worker].template.metadata.annotations"
                    "[kueue.x-k8s.io/podset-unconstrained-topology]")
    assert message.startswith('Invalid value: "maybe"')
    assert len(errors) == 4
    with pytest.raises(ValueError, match="must have at least one container"):
        workload.workload(KIND, obj)
    assert [(e.path, e.message) for e in workload.validate(KIND, {"spec": {}})] == [
        ("spec.pytorchReplicaSpecs", "Required value: must be required")]
    assert [(e.path, e.message) for e in workload.validate(KIND, {"spec": {"pytorchReplicaSpecs": {
        "Worker": {"replicas": "two"}}}})] == [
        ("spec.pytorchReplicaSpecs[Worker].replicas", "Invalid value: 'two': must be an integer")]


# ---- the GenericJob ----------------------------------------------------------------------------------


def test_a_running_pytorchjob_without_workload_is_suspended_first() -> None:
    (suspend, note, create) = reconcile(job(pt(suspend=False)), None, FLAVORS)
    assert suspend == Patch("PyTorchJob", "ns", "train", {"spec": {"runPolicy": {"suspend": True}}})
    assert isinstance(note, Note) and isinstance(create, CreateWorkload)


def test_admission_starts_it_with_each_flavor_in_its_replica_types_template() -> None:
    """master on cpu, workers on gpu: runPolicy.suspend false; each template gets its flavor's node
    labels (the workers keep zone=a) and the workers the GPU toleration, each the podset and queue labels."""
    training = job(pt())
    (start, note) = reconcile(training, admitted(training.workload_name(), ASSIGNED), FLAVORS)
    assert isinstance(start, Replace) and start.kind == "PyTorchJob" and isinstance(note, Note)
    assert start.obj["spec"]["runPolicy"] == {"suspend": False}
    specs = start.obj["spec"]["pytorchReplicaSpecs"]
    master, worker = specs["Master"]["template"], specs["Worker"]["template"]
    assert master["spec"]["nodeSelector"] == {"pool": "cpu"} and "tolerations" not in master["spec"]
    assert worker["spec"]["nodeSelector"] == {"zone": "a", "gpu": "h100"} and worker["spec"]["tolerations"] == [TOLERATION]
    queues = {"kueue.x-k8s.io/local-queue-name": "", "kueue.x-k8s.io/cluster-queue-name": "cq"}
    assert worker["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "worker", **queues}
    assert start.obj["metadata"]["resourceVersion"] == "7"


def test_eviction_suspends_it_and_restores_the_templates_the_workload_recorded() -> None:
    training = job(pt())
    wl = admitted(training.workload_name(), ASSIGNED)
    started = reconcile(training, wl, FLAVORS)[0].obj
    evicted = {"metadata": wl["metadata"], "spec": training.build_workload()["spec"],
               "status": {"conditions": [{"type": "QuotaReserved", "status": "False"},
                                         {"type": "Evicted", "status": "True"}]}}
    (restore, note) = reconcile(job(started), evicted, FLAVORS)
    assert isinstance(restore, Replace) and restore.change is not None and isinstance(note, Note)
    restored = restore.change(copy.deepcopy(started))
    assert restored["spec"] == pt()["spec"]  # suspended, every template as created
    assert reconcile(job(restored), evicted, FLAVORS) == []


def test_a_stopped_job_holds_its_quota_until_none_of_its_pods_may_run() -> None:
    """The training-operator zeroes every replica's ``active`` as soon as it has asked for the Pods'
    deletion, while they still run through their grace period: the stop is reported with the job's
    Pods as lingering (``training.kubeflow.org/job-name``), which the controller lists before it releases
    the quota (``JobStopped.lingering``)."""
    training = job(pt())
    wl = admitted(training.workload_name(), ASSIGNED)
    evicted = {"metadata": wl["metadata"], "spec": training.build_workload()["spec"],
               "status": {"admission": wl["status"]["admission"],
                          "conditions": [{"type": "QuotaReserved", "status": "True"},
                                         {"type": "Evicted", "status": "True"}]}}
    suspended = job(pt(status={"replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 0}}}))
    stopped = [a for a in reconcile(suspended, evicted, FLAVORS) if isinstance(a, JobStopped)]
    assert stopped == [JobStopped("ns", training.workload_name(), ("training.kubeflow.org/job-name=train",))]


def test_wrong_number_of_infos_is_refused() -> None:
    with pytest.raises(PodSetInfoError, match="expecting 2 podsets, got 1"):
        with_pod_sets_info(KIND, pt(), [pod_set_info_from_flavors([FLAVORS["cpu"]], name="master")], restore=False)


def test_conditions_finish_it_running_is_ready_and_active_replicas_keep_it_active() -> None:
    assert job(pt()).finished() == (False, False, "")
    done = job(pt(status={"conditions": [{"type": "Created", "status": "True"},
                                         {"type": "Succeeded", "status": "True", "message": "all done"}]}))
    assert done.finished() == (True, True, "all done")
    failed = job(pt(status={"conditions": [{"type": "Failed", "status": "True", "message": "oom"}]}))
    assert failed.finished() == (True, False, "oom")
    running = job(pt(suspend=False, status={"conditions": [{"type": "Running", "status": "True"}],
                                             "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 0}}}))
    assert running.pods_ready() and running.is_active()
    assert not job(pt(status={"replicaStatuses": {"Worker": {"succeeded": 3}}})).is_active()
    assert not job(pt(status={"conditions": [{"type": "Running", "status": "False"}]})).pods_ready()
    assert running.reclaimable_pods() == {}


# ---- the webhooks --------------------------------------------------------------------------------------


def test_the_mutating_webhook_suspends_it_in_its_run_policy_and_defaults_its_queue() -> None:
    mutate = admission.mutator("PyTorchJob", FRAMEWORKS, False, lambda ns: ns == "ns")
    assert patch(mutate(request(pt(suspend=False)))) == [{"op": "add", "path": "/spec/runPolicy/suspend", "value": True}]
    assert patch(mutate(request(pt(suspend=None, labels={})))) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
        {"op": "add", "path": "/spec/runPolicy", "value": {"suspend": True}}]
    assert patch(mutate(request(pt()))) == []
    assert patch(admission.mutator("PyTorchJob", ("batch/job",), False)(request(pt(suspend=False)))) == []


def test_managed_by_is_defaulted_beside_suspend_where_multikueue_dispatches() -> None:
    mutate = admission.mutator("PyTorchJob", FRAMEWORKS, False, dispatches=lambda ns, q: q == "lq")
    assert patch(mutate(request(pt(suspend=None)))) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"suspend": True}},
        {"op": "add", "path": "/spec/runPolicy/managedBy", "value": "kueue.x-k8s.io/multikueue"}]
    own = pt(run_policy={"managedBy": "kubeflow.org/training-operator"})
    assert patch(mutate(request(own))) == [
        {"op": "replace", "path": "/spec/runPolicy/managedBy", "value": "kueue.x-k8s.io/multikueue"}]
    assert patch(mutate(request(pt(run_policy={"managedBy": "example.com/other"})))) == []
    assert registry.BY_KIND["PyTorchJob"].own_controller == "kubeflow.org/training-operator"


def test_the_validating_webhook_refuses_a_bad_queue_a_queue_change_while_running_and_a_bad_topology() -> None:
    validate = admission.validator_for_jobs("PyTorchJob", FRAMEWORKS)
    refused = validate(request(pt(labels={"kueue.x-k8s.io/queue-name": "Not_A_Name"})))
    assert refused["allowed"] is False
    assert "metadata.labels[kueue.x-k8s.io/queue-name]" in refused["status"]["message"]
    running = pt(suspend=False)
    moved = copy.deepcopy(running)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    refused = validate(request(moved, "UPDATE", running))
    assert refused["allowed"] is False and "field is immutable" in refused["status"]["message"]
    moved_suspended = copy.deepcopy(pt())
    moved_suspended["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    assert validate(request(moved_suspended, "UPDATE", pt()))["allowed"] is True
    bad = pt()
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}}
    refused = validate(request(bad))
    assert refused["allowed"] is False
    assert "spec.pytorchReplicaSpecs[Master].template.metadata.annotations" in refused["status"]["message"]


def test_the_hooks_are_named_as_upstreams_and_registered_only_with_the_integration() -> None:
    assert "mpytorchjob.kb.io" in [h.name for h in names.mutating_for(FRAMEWORKS)]
    assert "mpytorchjob.kb.io" not in [h.name for h in names.mutating_for(("batch/job",))]
    (hook,) = [h for h in names.validating_jobs_for(FRAMEWORKS) if h.kind == "PyTorchJob"]
    assert hook.path == "/validate-kubeflow-org-v1-pytorchjob" and hook.resources == ("pytorchjobs",)


# ---- MultiKueue --------------------------------------------------------------------------------------


def test_the_multikueue_adapter_hands_over_only_multikueues_and_clears_managed_by_in_the_copy() -> None:
    adapter = registry.BY_KIND["PyTorchJob"].multikueue
    local = pt(run_policy={"managedBy": "kueue.x-k8s.io/multikueue"})
    assert adapter.unmanaged(local) is None
    assert adapter.unmanaged(pt()) == 'Expecting spec.runPolicy.managedBy to be "kueue.x-k8s.io/multikueue" not ""'
    clone = adapter.clone(local, "wl-1", "mgr")
    assert clone["apiVersion"] == "kubeflow.org/v1" and clone["kind"] == "PyTorchJob"
    assert clone["metadata"] == {"name": "train", "namespace": "ns", "labels": {
        "kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/prebuilt-workload-name": "wl-1",
        "kueue.x-k8s.io/multikueue-origin": "mgr"}}
    assert clone["spec"] == pt()["spec"]  # runPolicy.managedBy dropped, the rest as the manager's
    assert local["spec"]["runPolicy"]["managedBy"] == "kueue.x-k8s.io/multikueue"  # the local one untouched
    remote = {"status": {"conditions": [{"type": "Running", "status": "True"}],
                         "replicaStatuses": {"Worker": {"active": 3}}}}
    assert adapter.mirrored(local, remote) == remote["status"]
    shown = adapter.given_up({"status": {"replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2,
                                                                                                  "succeeded": 1}}}})
    assert shown == {"replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 0, "succeeded": 1}}}
    assert adapter.given_up({"status": {"replicaStatuses": {"Worker": {"succeeded": 3}}}}) is None
