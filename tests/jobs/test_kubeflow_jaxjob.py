"""JAXJob (``pykueue.jobs.jaxjob``): what differs from the other Kubeflow kinds, worked out by hand from
upstream's jaxjob controller (OrderedReplicaTypes: Worker) and the training-operator v1.9's JAXJob
webhook. What it shares is tested with PyTorchJob."""

from __future__ import annotations

from pykueue.jobs import jaxjob, registry
from pykueue.jobs.kubeflow import workload
from tests.jobs.kubeflow_objects import replica, training_job


def jax(**specs: dict) -> dict:
    return training_job("kubeflow.org/v1", "JAXJob", "jaxReplicaSpecs", specs)


def test_one_worker_pod_set() -> None:
    obj = jax(Worker=replica("jax", "1", 8))
    assert [(p["name"], p["count"]) for p in workload.pod_sets(jaxjob.KIND, obj)] == [("worker", 8)]
    assert workload.workload(jaxjob.KIND, obj)["metadata"]["name"].startswith("jaxjob-train-")


def test_the_operator_takes_only_workers() -> None:
    obj = jax(Worker=replica("jax", "1"), Master=replica("jax", "1"))
    assert [(e.path, e.message) for e in workload.validate(jaxjob.KIND, obj)] == [
        ("spec.jaxReplicaSpecs[Master]", 'Unsupported value: "Master": supported values: "Worker"')]


def test_registered_with_the_shared_record() -> None:
    integration = registry.BY_KIND["JAXJob"]
    assert integration.framework == "kubeflow.org/jaxjob" and integration.resource.plural == "jaxjobs"
    assert "kubeflow.org/jaxjob" not in registry.NOT_INTEGRATED
