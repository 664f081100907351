"""Deployments and StatefulSets -> the Pods and Workloads upstream's integrations make of them."""

from __future__ import annotations

import hashlib

import pytest

from pykueue.jobs.batch import JobConversionError
from pykueue.jobs.deployment import pods, validate, workloads_from_deployment
from pykueue.jobs.statefulset import group_name, workload_from_statefulset
from pykueue.jobs.statefulset import pods as sts_pods


def _serving(kind: str, replicas: object = 3, **labels: str) -> dict:
    spec: dict = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}, "annotations": {"team": "a"}},
            "spec": {"priorityClassName": "high",
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta = {"name": "web", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q", **labels},
            "annotations": {"pykueue.dev/runtime": "5s"}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def test_deployment_pods_are_named_by_replica_and_carry_the_webhook_labels() -> None:
    made = pods(_serving("Deployment", **{"kueue.x-k8s.io/priority-class": "gold", "other": "x"}))
    assert [p["metadata"]["name"] for p in made] == ["web-0", "web-1", "web-2"]
    first = made[0]["metadata"]
    # queue and workload priority class copied from the Deployment; its other labels are not
    assert first["labels"] == {"app": "web", "kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": "gold"}
    assert first["annotations"] == {"pykueue.dev/runtime": "5s", "team": "a",
                                    "kueue.x-k8s.io/pod-suspending-parent": "deployment"}
    assert first["namespace"] == "ns"
    assert made[0]["spec"]["priorityClassName"] == "high"


def test_deployment_is_one_single_pod_workload_per_replica() -> None:
    built = workloads_from_deployment(_serving("Deployment"))
    assert [name for name, _ in built] == ["web-0", "web-1", "web-2"]
    for name, workload in built:
        assert workload["spec"]["queueName"] == "q"
        assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("main", 1)]
        assert workload["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                                        "name": "high"}
        assert workload["metadata"]["ownerReferences"][0]["name"] == name


@pytest.mark.parametrize(("replicas", "names"), [(None, ["web-0"]), (0, []), (2, ["web-0", "web-1"])])
def test_deployment_replicas_default_to_one(replicas: object, names: list[str]) -> None:
    assert [n for n, _ in workloads_from_deployment(_serving("Deployment", replicas))] == names


def test_deployment_validation_lists_every_problem_with_its_path() -> None:
    bad = _serving("Deployment", -1, **{"kueue.x-k8s.io/queue-name": "Bad_Q"})
    del bad["spec"]["template"]
    assert [(e.path, e.message.split(":")[0]) for e in validate(bad)] == [
        ("metadata.labels[kueue.x-k8s.io/queue-name]", "Invalid value"),
        ("spec.template", "Required value"),
        ("spec.replicas", "Invalid value"),
    ]
    with pytest.raises(JobConversionError):
        workloads_from_deployment(bad)


def test_statefulset_group_is_named_as_upstream_names_its_workload() -> None:
    # upstream's webhook names the group before the StatefulSet exists: GetWorkloadName(name), no UID
    digest = hashlib.sha1(b"StatefulSet\napps\nweb\n").hexdigest()[:5]
    assert group_name(_serving("StatefulSet")) == f"statefulset-web-{digest}"
    uid = {**_serving("StatefulSet"), "metadata": {"name": "web", "uid": "u-1"}}
    assert group_name(uid) == f"statefulset-web-{digest}"


def test_statefulset_pods_are_one_group_of_replicas() -> None:
    sts = _serving("StatefulSet")
    made = sts_pods(sts)
    assert [p["metadata"]["name"] for p in made] == ["web-0", "web-1", "web-2"]
    for i, pod in enumerate(made):
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == group_name(sts)
        assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "3"
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] == "true"
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] == "true"


def test_statefulset_workload_is_one_pod_set_of_replicas_owned_by_every_pod() -> None:
    built = workload_from_statefulset(_serving("StatefulSet"), "abcd1234")
    assert built is not None
    assert built["metadata"]["name"] == group_name(_serving("StatefulSet"))
    assert [(ps["name"], ps["count"]) for ps in built["spec"]["podSets"]] == [("abcd1234", 3)]
    assert [o["name"] for o in built["metadata"]["ownerReferences"]] == ["web-0", "web-1", "web-2"]
    assert built["spec"]["queueName"] == "q"


def test_statefulset_of_no_replicas_has_no_workload() -> None:
    assert workload_from_statefulset(_serving("StatefulSet", 0), "abcd1234") is None
