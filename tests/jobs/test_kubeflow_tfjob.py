"""TFJob (``pykueue.jobs.tfjob``): what differs from the other Kubeflow kinds, worked out by hand from
upstream's tfjob controller (OrderedReplicaTypes: Chief, Master, PS, Worker, Evaluator) and the
training-operator v1.9's TFJob webhook. What it shares is tested with PyTorchJob
(tests/jobs/test_kubeflow_pytorchjob.py)."""

from __future__ import annotations

from pykueue.jobs import registry, tfjob
from pykueue.jobs.kubeflow import workload
from tests.jobs.kubeflow_objects import replica, training_job


def tf(**specs: dict) -> dict:
    return training_job("kubeflow.org/v1", "TFJob", "tfReplicaSpecs", specs)


def test_pod_sets_follow_chief_ps_worker_evaluator_whatever_the_maps_order() -> None:
    obj = tf(Evaluator=replica("tensorflow", "1"), Worker=replica("tensorflow", "1", 4),
             PS=replica("tensorflow", "1", 2), Chief=replica("tensorflow", "1", 1))
    assert [(p["name"], p["count"]) for p in workload.pod_sets(tfjob.KIND, obj)] == [
        ("chief", 1), ("ps", 2), ("worker", 4), ("evaluator", 1)]
    name = workload.workload(tfjob.KIND, obj)["metadata"]["name"]
    assert name.startswith("tfjob-train-")


def test_the_operator_refuses_a_chief_and_a_master_and_a_type_without_a_tensorflow_container() -> None:
    obj = tf(Chief=replica("tensorflow", "1"), Master=replica("tensorflow", "1"), Worker=replica("tf", "1"))
    assert [(e.path, e.message) for e in workload.validate(tfjob.KIND, obj)] == [
        ("spec.tfReplicaSpecs[Worker].template.spec.containers",
         "Required value: must have at least one container with name tensorflow"),
        ("spec.tfReplicaSpecs", "Forbidden: must not have more than 1 Chief or Master role")]
    # any replica type is the operator's to take; one Kueue does not order is no pod set
    assert workload.validate(tfjob.KIND, tf(Worker=replica("tensorflow", "1"), Other=replica("tensorflow", "1"))) == []


def test_registered_with_the_shared_record() -> None:
    integration = registry.BY_KIND["TFJob"]
    assert integration.framework == "kubeflow.org/tfjob" and integration.resource.plural == "tfjobs"
    assert integration.managed_by_field == "spec.runPolicy.managedBy"
    assert integration.own_controller == "kubeflow.org/training-operator"
