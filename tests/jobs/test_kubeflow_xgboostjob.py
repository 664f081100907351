"""XGBoostJob (``pykueue.jobs.xgboostjob``): what differs from the other Kubeflow kinds, worked out by hand
from upstream's xgboostjob controller (OrderedReplicaTypes: Master, Worker) and the training-operator
v1.9's XGBoostJob webhook. What it shares is tested with PyTorchJob."""

from __future__ import annotations

from pykueue.jobs import registry, xgboostjob
from pykueue.jobs.kubeflow import workload
from tests.jobs.kubeflow_objects import replica, training_job


def xgb(**specs: dict) -> dict:
    return training_job("kubeflow.org/v1", "XGBoostJob", "xgbReplicaSpecs", specs)


def test_pod_sets_master_then_worker() -> None:
    obj = xgb(Worker=replica("xgboost", "1", 2), Master=replica("xgboost", "1", 1))
    assert [(p["name"], p["count"]) for p in workload.pod_sets(xgboostjob.KIND, obj)] == [("master", 1), ("worker", 2)]
    assert workload.workload(xgboostjob.KIND, obj)["metadata"]["name"].startswith("xgboostjob-train-")


def test_the_operator_wants_exactly_one_master() -> None:
    assert [(e.path, e.message) for e in workload.validate(xgboostjob.KIND, xgb(Worker=replica("xgboost", "1")))] == [
        ("spec.xgbReplicaSpecs[Master]", "Required value: must be present")]
    two = xgb(Master=replica("xgboost", "1", 2), Launcher=replica("xgboost", "1"))
    assert [(e.path, e.message) for e in workload.validate(xgboostjob.KIND, two)] == [
        ("spec.xgbReplicaSpecs[Master].replicas", "Forbidden: must be 1"),
        ("spec.xgbReplicaSpecs[Launcher]", 'Unsupported value: "Launcher": supported values: "Master", "Worker"')]


def test_registered_with_the_shared_record() -> None:
    integration = registry.BY_KIND["XGBoostJob"]
    assert integration.framework == "kubeflow.org/xgboostjob" and integration.resource.plural == "xgboostjobs"
    assert "kubeflow.org/xgboostjob" not in registry.NOT_INTEGRATED
