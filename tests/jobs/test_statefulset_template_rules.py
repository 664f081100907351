"""What upstream's StatefulSet webhook (v0.17+) refuses of a StatefulSet Kueue manages beyond its queue
and size: a change to its pod template's shape (``ValidateImmutablePodGroupPodSpec``, the fields the
role hash reads); and what it leaves alone: a StatefulSet whose template another framework marked
(``managedByAnotherFramework``: a LeaderWorkerSet's)."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs.statefulset import webhook as statefulset_webhook

QUEUE = "kueue.x-k8s.io/queue-name"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"


def sts(queue: str | None = "lq", parent: str | None = "statefulset", replicas: int = 2) -> dict[str, Any]:
    annotations = {PARENT: parent} if parent else {}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u1", "labels": {QUEUE: queue} if queue else {}},
            "spec": {"replicas": replicas, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "pause:1", "resources": {"requests": {"cpu": "1"}}}],
                         "initContainers": [{"name": "ic", "image": "pause:1"}]}}},
            "status": {"readyReplicas": 2, "replicas": 2}}


def messages(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f"{e.path}: {e.message}" for e in statefulset_webhook.validate_statefulset_update(old, new)]


def test_a_managed_statefulsets_requests_are_fixed_but_its_image_rolls() -> None:
    old = sts()
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "pause:2"
    assert messages(old, new) == []
    new["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert messages(old, new) == [
        'spec.template.spec.containers[0].resources.requests: Invalid value: {"cpu":"2"}: field is immutable']


def test_an_init_containers_requests_and_the_placement_fields_are_fixed_too() -> None:
    old = sts()
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["initContainers"][0]["resources"] = {"requests": {"cpu": "1"}}
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    new["spec"]["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert [m.split(":")[0] for m in messages(old, new)] == [
        "spec.template.spec.initContainers[0].resources.requests", "spec.template.spec.nodeSelector",
        "spec.template.spec.tolerations"]


def test_an_unmanaged_statefulset_changes_its_template_freely() -> None:
    old = sts(queue=None, parent=None)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert messages(old, new) == []


def test_a_leaderworkersets_statefulset_is_left_to_its_integration() -> None:
    """LWS's controller creates StatefulSets from the LWS's templates, which Kueue's LWS webhook marked:
    neither the StatefulSet's rules nor its defaulting touch them, even with a queue label."""
    old = sts(parent="leaderworkerset.x-k8s.io/leaderworkerset")
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    new["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    new["metadata"]["labels"][QUEUE] = "other"
    assert messages(old, new) == []
    assert statefulset_webhook.statefulset_defaults(old, manage_without_queue_name=True) == []
    assert statefulset_webhook.statefulset_defaults(sts(parent=None), manage_without_queue_name=True) != []
