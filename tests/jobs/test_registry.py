"""The integration registry (``pykueue.jobs.registry``): every table generic code reads comes out of it
as upstream's integrations have them, worked out by hand from upstream v0.18's RegisterIntegration
calls and IntegrationCallbacks."""

from __future__ import annotations

from pykueue.api import loader
from pykueue.controller.webhooks import names
from pykueue.jobs import managed, registry


def test_each_framework_is_registered_once() -> None:
    assert len(set(registry.FRAMEWORKS)) == len(registry.FRAMEWORKS) == 15
    assert not set(registry.FRAMEWORKS) & set(registry.NOT_INTEGRATED)
    assert registry.BY_KIND["JobSet"].framework == "jobset.x-k8s.io/jobset"


def test_the_serving_kinds_turn_the_pod_integration_on() -> None:
    assert registry.enabled(["deployment"]) >= {"deployment", "pod"}
    assert registry.with_implied(["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"]) == {
        "batch/job", "leaderworkerset.x-k8s.io/leaderworkerset", "pod"}
    assert registry.with_implied(["ray.io/rayjob"]) == {"ray.io/rayjob"}
    assert loader.SERVING_KINDS == ("StatefulSet", "Deployment", "LeaderWorkerSet")
    assert set(names.POD_FRAMEWORKS) == {"pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"}


def test_whose_pods_and_whose_children() -> None:
    on = registry.ALL
    # the Pod webhook leaves alone the Pods of a Job, a StatefulSet and a RayCluster (their integrations')
    assert {(i.group, i.kind) for i in registry.INTEGRATIONS if i.owns_pods} == {
        ("batch", "Job"), ("apps", "StatefulSet"), ("ray.io", "RayCluster")}
    assert on.owner_integration("ray.io", "RayCluster").framework == "ray.io/raycluster"
    # an object any kind that is on controls is that kind's child, never queued by itself; not once it is off
    assert on.owner_integration("jobset.x-k8s.io", "JobSet").framework == "jobset.x-k8s.io/jobset"
    assert registry.enabled(["batch/job"]).owner_integration("jobset.x-k8s.io", "JobSet") is None
    assert on.owner_integration("apps", "ReplicaSet") is None
    child = {"metadata": {"ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                               "name": "js", "controller": True}]}}
    assert managed.managed_owner(child, on) is not None
    assert managed.managed_owner(child, registry.enabled(["batch/job"])) is None
    pod_owned = {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": True}]}}
    assert managed.managed_owner(pod_owned, on) is None  # a Pod queues no children
    assert loader.INTEGRATIONS["LeaderWorkerSet"] == "leaderworkerset.x-k8s.io/leaderworkerset"
