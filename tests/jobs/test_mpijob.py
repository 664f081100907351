"""MPIJob (``pykueue.jobs.mpijob``), read by the Kubeflow kinds' shared part: its Workload (launcher then
worker, runLauncherAsWorker's pod index offset), start and stop through ``spec.runPolicy.suspend``, its
webhooks, ``spec.runPolicy.managedBy`` and its MultiKueue adapter. Worked out by hand from upstream's
mpijob controller, webhook and MultiKueue adapter and the MPI operator v0.8's validation."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.controller.webhooks import admission
from pykueue.jobs import mpijob, registry
from pykueue.jobs.framework import CreateWorkload, Replace
from pykueue.jobs.kubeflow import workload
from tests.jobs.kind_objects import FLAVORS, admitted, patch, request
from tests.jobs.kubeflow_objects import replica, training_job
from tests.jobs.writes import reconcile

FRAMEWORKS = ("batch/job", "kubeflow.org/mpijob")


def mpi(suspend: bool | None = True, launcher_as_worker: bool | None = None, **meta: Any) -> dict[str, Any]:
    obj = training_job("kubeflow.org/v2beta1", "MPIJob", "mpiReplicaSpecs",
                       {"Worker": replica("worker", "2", 4), "Launcher": replica("launcher", "1", 1)},
                       suspend=suspend, **meta)
    obj["spec"]["slotsPerWorker"] = 1
    if launcher_as_worker is not None:
        obj["spec"]["runLauncherAsWorker"] = launcher_as_worker
    return obj


def job(obj: dict[str, Any]) -> Any:
    return registry.BY_KIND["MPIJob"].live.wrap(obj, [])


def test_an_mpijob_is_one_workload_with_launcher_then_worker() -> None:
    (create,) = reconcile(job(mpi()), None, FLAVORS)
    assert isinstance(create, CreateWorkload)
    assert create.manifest["metadata"]["name"].startswith("mpijob-train-")
    assert [(p["name"], p["count"]) for p in create.manifest["spec"]["podSets"]] == [("launcher", 1), ("worker", 4)]
    assert create.manifest["metadata"]["ownerReferences"][0]["apiVersion"] == "kubeflow.org/v2beta1"


def test_run_launcher_as_worker_counts_the_workers_pod_indexes_from_one() -> None:
    obj = mpi(launcher_as_worker=True)
    for spec in obj["spec"]["mpiReplicaSpecs"].values():
        spec["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}}
    launcher, worker = workload.pod_sets(mpijob.KIND, obj)
    assert launcher["topologyRequest"] == {"required": "rack", "podIndexLabel": "training.kubeflow.org/replica-index"}
    assert worker["topologyRequest"] == {"required": "rack", "podIndexLabel": "training.kubeflow.org/replica-index",
                                         "podIndexOffset": 1}
    obj["spec"]["runLauncherAsWorker"] = False
    assert "podIndexOffset" not in workload.pod_sets(mpijob.KIND, obj)[1]["topologyRequest"]
    # the pod sets' counts do not change with it
    assert [p["count"] for p in workload.pod_sets(mpijob.KIND, obj)] == [1, 4]


def test_what_the_mpi_operator_refuses_is_named_by_its_field_path() -> None:
    obj = mpi()
    specs = obj["spec"]["mpiReplicaSpecs"]
    del specs["Launcher"]
    specs["Worker"]["replicas"] = 0
    specs["Worker"]["template"]["spec"]["containers"] = []
    assert [(e.path, e.message) for e in workload.validate(mpijob.KIND, obj)] == [
        ("spec.mpiReplicaSpecs[Launcher]", "Required value: must have Launcher replica spec"),
        ("spec.mpiReplicaSpecs[Worker].template.spec.containers", "Required value: must define at least one container"),
        ("spec.mpiReplicaSpecs[Worker].replicas", "Invalid value: 0: must be greater than or equal to 1")]
    two = mpi()
    two["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    assert [(e.path, e.message) for e in workload.validate(mpijob.KIND, two)] == [
        ("spec.mpiReplicaSpecs[Launcher].replicas", "Invalid value: 2: must be 1")]
    assert [(e.path, e.message) for e in workload.validate(mpijob.KIND, {"spec": {}})] == [
        ("spec.mpiReplicaSpecs", "Required value: must have replica specs")]


def test_admission_unsuspends_its_run_policy_and_a_stop_restores_it() -> None:
    training = job(mpi())
    wl = admitted(training.workload_name(), [("launcher", "cpu", 1), ("worker", "gpu", 4)])
    (start, _note) = reconcile(training, wl, FLAVORS)
    assert isinstance(start, Replace) and start.obj["spec"]["runPolicy"] == {"suspend": False}
    specs = start.obj["spec"]["mpiReplicaSpecs"]
    assert specs["Launcher"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert specs["Worker"]["template"]["spec"]["nodeSelector"] == {"gpu": "h100"}
    evicted = {"metadata": wl["metadata"], "spec": training.build_workload()["spec"],
               "status": {"conditions": [{"type": "Evicted", "status": "True"}]}}
    (restore, _note) = reconcile(job(start.obj), evicted, FLAVORS)
    assert restore.change(copy.deepcopy(start.obj))["spec"] == mpi()["spec"]


def test_the_webhook_suspends_it_and_hands_it_to_multikueue_from_its_own_operator() -> None:
    mutate = admission.mutator("MPIJob", FRAMEWORKS, False, dispatches=lambda ns, q: True)
    own = mpi(suspend=False)
    own["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/mpi-operator"
    assert patch(mutate(request(own))) == [
        {"op": "add", "path": "/spec/runPolicy/suspend", "value": True},
        {"op": "replace", "path": "/spec/runPolicy/managedBy", "value": "kueue.x-k8s.io/multikueue"}]
    other = mpi()
    other["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"  # not the MPI operator's own
    assert patch(mutate(request(other))) == []
    validate = admission.validator_for_jobs("MPIJob", FRAMEWORKS)
    assert validate(request(mpi(labels={"kueue.x-k8s.io/queue-name": "Bad_Name"})))["allowed"] is False


def test_the_multikueue_adapter_clears_run_policy_managed_by_in_the_workers_copy() -> None:
    adapter = registry.BY_KIND["MPIJob"].multikueue
    local = mpi()
    local["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert adapter.unmanaged(local) is None
    clone = adapter.clone(local, "wl-1", "mgr")
    assert clone["apiVersion"] == "kubeflow.org/v2beta1" and clone["spec"] == mpi()["spec"]
    assert clone["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == "wl-1"


def test_the_registry_has_every_kubeflow_kind_and_no_longer_lists_them_as_missing() -> None:
    kinds = {"PyTorchJob": "kubeflow.org/pytorchjob", "TFJob": "kubeflow.org/tfjob",
             "XGBoostJob": "kubeflow.org/xgboostjob", "PaddleJob": "kubeflow.org/paddlejob",
             "JAXJob": "kubeflow.org/jaxjob", "MPIJob": "kubeflow.org/mpijob"}
    assert {k: registry.BY_KIND[k].framework for k in kinds} == kinds
    assert not set(kinds.values()) & set(registry.NOT_INTEGRATED)
    assert registry.NOT_INTEGRATED == ("trainer.kubeflow.org/trainjob", "workload.codeflare.dev/appwrapper",
                                       "sparkoperator.k8s.io/sparkapplication")
    assert registry.BY_KIND["MPIJob"].own_controller == "kubeflow.org/mpi-operator"
    assert registry.enabled(["kubeflow.org/mpijob"]).owner_integration("kubeflow.org", "MPIJob") is not None
