"""The integration registry (``pykueue.jobs.registry``): every table generic code reads comes out of it
as upstream's integrations have them, worked out by hand from upstream v0.18's RegisterIntegration
calls and IntegrationCallbacks."""

from __future__ import annotations

from pykueue.api import loader
from pykueue.controller.webhooks import names
from pykueue.jobs import framework, managed, pods, registry


def test_each_framework_is_registered_once() -> None:
    assert len(set(registry.FRAMEWORKS)) == len(registry.FRAMEWORKS) == 9
    assert not set(registry.FRAMEWORKS) & set(registry.NOT_INTEGRATED)
    assert registry.BY_KIND["JobSet"].framework == "jobset.x-k8s.io/jobset"


def test_the_serving_kinds_turn_the_pod_integration_on() -> None:
    assert framework.enabled(["deployment"]) >= {"deployment", "pod"}
    assert registry.with_implied(["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"]) == {
        "batch/job", "leaderworkerset.x-k8s.io/leaderworkerset", "pod"}
    assert registry.with_implied(["ray.io/rayjob"]) == {"ray.io/rayjob"}
    assert loader.SERVING_KINDS == ("StatefulSet", "Deployment", "LeaderWorkerSet")
    assert set(names.POD_FRAMEWORKS) == {"pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"}


def test_whose_pods_and_whose_children() -> None:
    # the Pod webhook leaves alone the Pods of a Job, a StatefulSet and a RayCluster (their integrations')
    assert pods._OWNER_FRAMEWORKS == {("batch", "Job"): "batch/job", ("apps", "StatefulSet"): "statefulset",
                                      ("ray.io", "RayCluster"): "ray.io/raycluster"}
    # an object any other kind controls is that kind's child, never queued by itself
    assert managed.OWNER_FRAMEWORKS[("jobset.x-k8s.io", "JobSet")] == "jobset.x-k8s.io/jobset"
    assert ("", "Pod") not in managed.OWNER_FRAMEWORKS and len(managed.OWNER_FRAMEWORKS) == 8
    assert loader.INTEGRATIONS["LeaderWorkerSet"] == "leaderworkerset.x-k8s.io/leaderworkerset"
