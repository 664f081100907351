"""PaddleJob (``pykueue.jobs.paddlejob``): what differs from the other Kubeflow kinds, worked out by hand
from upstream's paddlejob controller (OrderedReplicaTypes: Master, Worker) and the training-operator
v1.9's PaddleJob webhook. What it shares is tested with PyTorchJob."""

from __future__ import annotations

from pykueue.jobs import paddlejob, registry
from pykueue.jobs.kubeflow import workload
from tests.jobs.kubeflow_objects import replica, training_job


def paddle(**specs: dict) -> dict:
    return training_job("kubeflow.org/v1", "PaddleJob", "paddleReplicaSpecs", specs)


def test_pod_sets_master_then_worker_and_a_worker_alone_is_one_pod_set() -> None:
    obj = paddle(Worker=replica("paddle", "1", 2), Master=replica("paddle", "1"))
    assert [(p["name"], p["count"]) for p in workload.pod_sets(paddlejob.KIND, obj)] == [("master", 1), ("worker", 2)]
    assert [p["name"] for p in workload.pod_sets(paddlejob.KIND, paddle(Worker=replica("paddle", "1", 2)))] == ["worker"]
    assert workload.workload(paddlejob.KIND, obj)["metadata"]["name"].startswith("paddlejob-train-")


def test_the_operator_quotes_the_container_name_it_wants() -> None:
    assert [(e.path, e.message) for e in workload.validate(paddlejob.KIND, paddle(Worker=replica("main", "1")))] == [
        ("spec.paddleReplicaSpecs[Worker].template.spec.containers",
         'Required value: must have at least one container with name "paddle"')]


def test_registered_with_the_shared_record() -> None:
    integration = registry.BY_KIND["PaddleJob"]
    assert integration.framework == "kubeflow.org/paddlejob" and integration.resource.plural == "paddlejobs"
    assert "kubeflow.org/paddlejob" not in registry.NOT_INTEGRATED
