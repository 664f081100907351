"""A Job owned by another kind Kueue manages is that job's child (upstream's FindAncestorJobManagedByKueue):
without manageJobsWithoutQueueName, only when the owner itself names a queue, read from the owner
whatever its kind (a RayJob's submitter Job here), never from the child."""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs.reconciler import JobKeys, Rules
from pykueue.jobs import registry
from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL, workload_name_for_owner

FRAMEWORKS = registry.enabled(["batch/job", "ray.io/rayjob"])
QUEUE = "kueue.x-k8s.io/queue-name"


def _submitter() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "rj-submitter", "namespace": "ns", "uid": "job-uid", "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "rj-uid", "controller": True}]},
            "spec": {"template": {"spec": {"containers": []}}}}


def _rayjob(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj", "namespace": "ns", "uid": "rj-uid",
                                                                      "labels": labels}, "spec": {}}


def _keys(owner: dict[str, Any] | None, manage_without_queue_name: bool = False) -> JobKeys:
    store = {"ray": {"RayJob/ns/rj": owner} if owner else {}}
    rules = Rules(manage_without_queue_name=manage_without_queue_name, frameworks=FRAMEWORKS)
    return JobKeys({"ns/rj-submitter": _submitter()}, rules,
                   owners=lambda kind, key: store["ray"].get(f"{kind}/{key}"))


def test_a_job_owned_by_a_queued_rayjob_is_its_child() -> None:
    (obj, key) = _keys(_rayjob({QUEUE: "lq"})).child("ns/rj-submitter")
    assert obj["metadata"]["name"] == "rj-submitter"
    assert key == f"ns/{workload_name_for_owner('RayJob', 'ray.io', 'rj', 'rj-uid')}"


def test_a_job_owned_by_a_rayjob_without_queue_or_not_cached_is_left_alone() -> None:
    assert _keys(_rayjob({})).child("ns/rj-submitter") is None
    assert _keys(None).child("ns/rj-submitter") is None
    # with manageJobsWithoutQueueName every owner of an integration that is on counts, cached or not
    assert _keys(None, manage_without_queue_name=True).child("ns/rj-submitter") is not None


def test_a_job_owned_by_an_object_naming_a_prebuilt_workload_runs_under_that_one() -> None:
    """A MultiKueue worker's RayJob or JobSet runs under the manager's Workload (its prebuilt label), not
    the name its own uid would make: its child Jobs must find that one admitted, or they are suspended."""
    (_, key) = _keys(_rayjob({QUEUE: "lq", PREBUILT_WORKLOAD_LABEL: "rayjob-rj-abcde"})).child("ns/rj-submitter")
    assert key == "ns/rayjob-rj-abcde"
