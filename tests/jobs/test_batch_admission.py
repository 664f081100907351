"""Admission injection into a Job and its restore on eviction (upstream podset.Merge/RestorePodSpec)."""

from __future__ import annotations

import copy

import pytest
import yaml

from pykueue.jobs.framework.podset import (
    PodSetInfoError,
    PodSetMergeError,
    merge_pod_set_info,
    pod_set_info_from_flavors,
    pod_set_info_from_pod_set,
)
from pykueue.jobs.job.workload import inject_admission, original_pod_set_info, restore_job, workload_from_job

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: render-frames
  namespace: studio
  labels:
    kueue.x-k8s.io/queue-name: render
  annotations:
    kueue.x-k8s.io/job-min-parallelism: "2"
spec:
  parallelism: 6
  completions: 12
  suspend: true
  template:
    metadata:
      labels:
        app: render
    spec:
      nodeSelector:
        kubernetes.io/arch: amd64
      tolerations:
      - key: dedicated
        operator: Equal
        value: render
        effect: NoSchedule
      initContainers:
      - name: sync-assets
        image: rclone/rclone:1.66
        resources:
          requests:
            cpu: 250m
      containers:
      - name: blender
        image: blender:4.1
        resources:
          requests:
            cpu: "8"
            memory: 32Gi
      - name: uploader
        image: uploader:0.3
        resources:
          requests:
            cpu: 100m
      restartPolicy: OnFailure
"""

FLAVORS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot-amd64
spec:
  nodeLabels:
    cloud.example.com/capacity: spot
    kubernetes.io/arch: amd64
  tolerations:
  - key: cloud.example.com/spot
    operator: Exists
    effect: NoSchedule
  - key: dedicated
    operator: Equal
    value: render
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: zone-b
spec:
  nodeLabels:
    topology.kubernetes.io/zone: zone-b
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot-amd64
spec:
  nodeLabels:
    cloud.example.com/capacity: ignored-duplicate
"""


def job() -> dict:
    return yaml.safe_load(JOB)


def flavors() -> list[dict]:
    return list(yaml.safe_load_all(FLAVORS))


def test_info_from_flavors() -> None:
    assert pod_set_info_from_flavors(flavors()) == {
        "name": "main",
        "count": None,
        "annotations": {},
        "labels": {"kueue.x-k8s.io/podset": "main"},
        "nodeSelector": {
            "cloud.example.com/capacity": "spot",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": "zone-b",
        },
        "tolerations": [
            {"key": "cloud.example.com/spot", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "render", "effect": "NoSchedule"},
        ],
        "schedulingGates": [],
    }


def test_info_from_a_flavor_without_node_labels() -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default"},
    }
    info = pod_set_info_from_flavors([flavor], count=4)
    assert info["nodeSelector"] == {}
    assert info["tolerations"] == []
    assert info["count"] == 4


def test_original_info_is_what_the_workload_records() -> None:
    original = original_pod_set_info(job())
    assert original == {
        "name": "main",
        "count": 6,
        "annotations": {},
        "labels": {"app": "render"},
        "nodeSelector": {"kubernetes.io/arch": "amd64"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "render", "effect": "NoSchedule"}],
        "schedulingGates": [],
    }
    assert pod_set_info_from_pod_set(workload_from_job(job())["spec"]["podSets"][0]) == original


def test_inject_full_admission() -> None:
    source = job()
    untouched = copy.deepcopy(source)

    started = inject_admission(source, [pod_set_info_from_flavors(flavors())])

    expected = copy.deepcopy(untouched)
    expected["spec"]["suspend"] = False
    # Partial admission is on, so parallelism is written even when the whole count is admitted.
    expected["spec"]["parallelism"] = 6
    expected["spec"]["template"]["metadata"]["labels"] = {"app": "render", "kueue.x-k8s.io/podset": "main"}
    expected["spec"]["template"]["spec"]["nodeSelector"] = {
        "kubernetes.io/arch": "amd64",
        "cloud.example.com/capacity": "spot",
        "topology.kubernetes.io/zone": "zone-b",
    }
    expected["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "render", "effect": "NoSchedule"},
        {"key": "cloud.example.com/spot", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert started == expected
    assert source == untouched


def test_partial_admission_sets_parallelism_and_keeps_completions() -> None:
    started = inject_admission(job(), [pod_set_info_from_flavors(flavors())], count=3)
    assert started["spec"]["parallelism"] == 3
    assert started["spec"]["completions"] == 12

    from_info = inject_admission(job(), [pod_set_info_from_flavors(flavors(), count=4)])
    assert from_info["spec"]["parallelism"] == 4


def test_count_is_ignored_without_partial_admission() -> None:
    source = job()
    del source["metadata"]["annotations"]
    started = inject_admission(source, [pod_set_info_from_flavors(flavors())], count=3)
    assert started["spec"]["parallelism"] == 6
    assert started["spec"]["suspend"] is False


def test_completions_follow_parallelism_when_annotated() -> None:
    source = job()
    source["spec"]["completions"] = 6
    source["spec"]["completionMode"] = "Indexed"
    source["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] = "true"
    original = original_pod_set_info(source)

    started = inject_admission(source, [pod_set_info_from_flavors(flavors())], count=4)
    assert (started["spec"]["parallelism"], started["spec"]["completions"]) == (4, 4)

    restored = restore_job(started, original)
    assert (restored["spec"]["parallelism"], restored["spec"]["completions"]) == (6, 6)


def test_inject_then_restore_gives_back_the_original_job() -> None:
    source = job()
    original = original_pod_set_info(source)

    started = inject_admission(source, [pod_set_info_from_flavors(flavors())], count=3)
    started_copy = copy.deepcopy(started)
    restored = restore_job(started, original)

    assert restored == source
    assert restored["spec"]["suspend"] is True
    assert started == started_copy


def test_restore_of_a_job_without_template_metadata_or_selectors() -> None:
    source = yaml.safe_load(
        """
apiVersion: batch/v1
kind: Job
metadata:
  name: plain
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 2
  template:
    spec:
      containers:
      - name: main
        image: busybox
        resources:
          requests:
            cpu: "1"
      restartPolicy: Never
"""
    )
    original = original_pod_set_info(source)
    started = inject_admission(source, [pod_set_info_from_flavors(flavors())])
    assert started["spec"]["template"]["metadata"] == {"labels": {"kueue.x-k8s.io/podset": "main"}}
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {
        "cloud.example.com/capacity": "spot",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": "zone-b",
    }
    restored = restore_job(started, original)
    assert restored == {**source, "spec": {**source["spec"], "suspend": True}}


def test_restore_keeps_labels_the_job_controller_added() -> None:
    source = job()
    original = original_pod_set_info(source)
    started = inject_admission(source, [pod_set_info_from_flavors(flavors())])
    started["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "0d5e"
    started["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] = "render-frames"
    started["status"] = {"startTime": "2024-05-01T10:00:05Z", "active": 0}

    restored = restore_job(started, original)

    assert restored["spec"]["template"]["metadata"]["labels"] == {
        "app": "render",
        "batch.kubernetes.io/controller-uid": "0d5e",
        "batch.kubernetes.io/job-name": "render-frames",
    }
    assert restored["status"] == {"active": 0}


def test_restore_uses_the_pod_set_count_when_completions_are_fewer() -> None:
    # Upstream restores parallelism to the Workload's count, min(parallelism, completions).
    source = job()
    source["spec"]["parallelism"] = 6
    source["spec"]["completions"] = 4
    original = original_pod_set_info(source)
    assert original["count"] == 4

    started = inject_admission(source, [pod_set_info_from_flavors(flavors())], count=3)
    restored = restore_job(started, original)
    assert restored["spec"]["parallelism"] == 4


def test_conflicting_node_label_raises() -> None:
    source = job()
    untouched = copy.deepcopy(source)
    arm = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "arm"},
        "spec": {"nodeLabels": {"kubernetes.io/arch": "arm64"}},
    }
    with pytest.raises(PodSetMergeError) as err:
        inject_admission(source, [pod_set_info_from_flavors([arm])])
    assert (err.value.field, err.value.key, err.value.existing, err.value.new) == (
        "nodeSelector",
        "kubernetes.io/arch",
        "amd64",
        "arm64",
    )
    assert str(err.value) == (
        "invalid admission check PodSetUpdate: conflict for nodeSelector: "
        "conflict for key=kubernetes.io/arch, value1=amd64, value2=arm64"
    )
    assert source == untouched


def test_same_node_label_value_is_not_a_conflict() -> None:
    same = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "amd"},
        "spec": {"nodeLabels": {"kubernetes.io/arch": "amd64"}},
    }
    started = inject_admission(job(), [pod_set_info_from_flavors([same])])
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/arch": "amd64"}


def test_conflicting_template_label_raises() -> None:
    source = job()
    source["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "workers"
    with pytest.raises(PodSetMergeError) as err:
        inject_admission(source, [pod_set_info_from_flavors(flavors())])
    assert err.value.field == "labels"


def test_exactly_one_info_is_expected() -> None:
    with pytest.raises(PodSetInfoError) as err:
        inject_admission(job(), [])
    assert str(err.value) == "invalid podset infos: expecting 1 podset, got 0"


def test_admission_check_update_merges_into_the_info() -> None:
    info = pod_set_info_from_flavors(flavors())
    update = {
        "annotations": {"cluster-autoscaler.kubernetes.io/consume-provisioning-request": "render-pr"},
        "nodeSelector": {"topology.kubernetes.io/zone": "zone-b"},
        "tolerations": [{"key": "cloud.example.com/spot", "operator": "Exists", "effect": "NoSchedule"}],
    }
    merged = merge_pod_set_info(info, update)
    assert merged["annotations"] == {
        "cluster-autoscaler.kubernetes.io/consume-provisioning-request": "render-pr"
    }
    assert merged["tolerations"] == info["tolerations"]
    assert merged["nodeSelector"] == info["nodeSelector"]
    assert info["annotations"] == {}

    with pytest.raises(PodSetMergeError):
        merge_pod_set_info(info, {"nodeSelector": {"topology.kubernetes.io/zone": "zone-c"}})


def test_toleration_with_explicit_empty_value_is_a_duplicate() -> None:
    source = job()
    source["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "cloud.example.com/spot", "operator": "Exists", "value": "", "effect": "NoSchedule"}
    ]
    started = inject_admission(source, [pod_set_info_from_flavors(flavors()[:1])])
    assert started["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "cloud.example.com/spot", "operator": "Exists", "value": "", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "render", "effect": "NoSchedule"},
    ]
