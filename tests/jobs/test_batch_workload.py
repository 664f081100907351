"""Job -> Workload conversion, checked against upstream Kueue v0.18's Job integration."""

from __future__ import annotations

import copy

import pytest
import yaml

from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import is_managed, priority_class_ref, queue_name
from pykueue.jobs.job.workload import (
    min_pods_count,
    pods_count,
    validate_job,
    workload_from_job,
    workload_name_for_job,
)

TRAINING_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train-resnet
  namespace: team-a
  uid: 6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55
  creationTimestamp: "2024-05-01T10:00:00Z"
  labels:
    kueue.x-k8s.io/queue-name: team-a-queue
    app: resnet
  annotations:
    pykueue.dev/arrival: 30s
    pykueue.dev/runtime: 10m
    provreq.kueue.x-k8s.io/maxRunDurationSeconds: "3600"
    description: nightly training
spec:
  parallelism: 4
  completions: 8
  suspend: true
  template:
    metadata:
      labels:
        app: resnet
        batch.kubernetes.io/job-name: train-resnet
        batch.kubernetes.io/controller-uid: 6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55
        job-name: train-resnet
        controller-uid: 6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55
      annotations:
        prometheus.io/scrape: "true"
    spec:
      priorityClassName: high-priority
      nodeSelector:
        cloud.example.com/pool: gpu
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      initContainers:
      - name: fetch-data
        image: busybox:1.36
        command: ["sh", "-c", "cp -r /src /data"]
        resources:
          requests:
            cpu: 500m
            memory: 128Mi
      containers:
      - name: trainer
        image: registry.example.com/resnet:2.1
        env:
        - name: EPOCHS
          value: "10"
        - name: LR
          value: "0.1"
        - name: EPOCHS
          value: "20"
        resources:
          requests:
            cpu: "4"
            memory: 16Gi
            nvidia.com/gpu: "1"
          limits:
            nvidia.com/gpu: "1"
      - name: metrics-sidecar
        image: registry.example.com/exporter:1.0
        resources:
          limits:
            cpu: 100m
            memory: 64Mi
      restartPolicy: Never
"""


def load(text: str) -> dict:
    return yaml.safe_load(text)


def minimal_job(**spec: object) -> dict:
    """A small managed Job; keyword arguments override spec fields (None removes one)."""
    job = load(
        """
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34
        resources:
          requests:
            cpu: "1"
      restartPolicy: Never
"""
    )
    for key, value in spec.items():
        if value is None:
            job["spec"].pop(key, None)
        else:
            job["spec"][key] = value
    return job


def test_full_workload_matches_upstream_construction() -> None:
    job = load(TRAINING_JOB)
    original = copy.deepcopy(job)

    workload = workload_from_job(job)

    assert workload == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-resnet-4b30b",
            "namespace": "team-a",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"kueue.x-k8s.io/job-uid": "6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55"},
            "annotations": {
                "pykueue.dev/arrival": "30s",
                "pykueue.dev/runtime": "10m",
                "provreq.kueue.x-k8s.io/maxRunDurationSeconds": "3600",
            },
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train-resnet",
                    "uid": "6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": "team-a-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "template": {
                        "metadata": {
                            "labels": {"app": "resnet"},
                            "annotations": {"prometheus.io/scrape": "true"},
                        },
                        "spec": {
                            "priorityClassName": "high-priority",
                            "nodeSelector": {"cloud.example.com/pool": "gpu"},
                            "tolerations": [
                                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                            ],
                            "initContainers": [
                                {
                                    "name": "fetch-data",
                                    "image": "busybox:1.36",
                                    "command": ["sh", "-c", "cp -r /src /data"],
                                    "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}},
                                }
                            ],
                            "containers": [
                                {
                                    "name": "trainer",
                                    "image": "registry.example.com/resnet:2.1",
                                    "env": [
                                        {"name": "EPOCHS", "value": "20"},
                                        {"name": "LR", "value": "0.1"},
                                    ],
                                    "resources": {
                                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                                        "limits": {"nvidia.com/gpu": "1"},
                                    },
                                },
                                {
                                    "name": "metrics-sidecar",
                                    "image": "registry.example.com/exporter:1.0",
                                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                                },
                            ],
                            "restartPolicy": "Never",
                        },
                    },
                }
            ],
            "priorityClassRef": {
                "group": "scheduling.k8s.io",
                "kind": "PriorityClass",
                "name": "high-priority",
            },
            "active": True,
        },
    }
    assert job == original


def test_workload_is_independent_of_the_job() -> None:
    job = load(TRAINING_JOB)
    workload = workload_from_job(job)
    workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/resnet:2.1"


def test_name_without_uid_hashes_the_name_in_place_of_the_uid() -> None:
    workload = workload_from_job(minimal_job())
    assert workload["metadata"]["name"] == "job-pi-181e8"
    assert "labels" not in workload["metadata"]
    assert workload["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "pi",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_workload_name_helper() -> None:
    assert (
        workload_name_for_job("train-resnet", "6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55")
        == "job-train-resnet-4b30b"
    )
    assert workload_name_for_job("sample-job") == "job-sample-job-37c3e"


def test_long_name_prefix_is_truncated_to_fit_253_characters() -> None:
    name = workload_name_for_job("a" * 250, "0a1b")
    assert name == "job-" + "a" * 243 + "-fa5e1"
    assert len(name) == 253


def test_namespace_defaults_and_creation_timestamp_is_optional() -> None:
    job = minimal_job()
    del job["metadata"]["namespace"]
    workload = workload_from_job(job)
    assert workload["metadata"]["namespace"] == "default"
    assert "creationTimestamp" not in workload["metadata"]


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [
        (None, None, 1),  # both defaulted by Kubernetes
        (3, None, 3),  # work queue: no completions
        (None, 5, 1),  # parallelism defaults to 1
        (4, 2, 2),  # completions smaller: only 2 pods can ever run
        (2, 6, 2),
        (5, 5, 5),
        (0, None, 0),
    ],
)
def test_count_from_parallelism_and_completions(
    parallelism: int | None, completions: int | None, count: int
) -> None:
    job = minimal_job(parallelism=parallelism, completions=completions)
    assert pods_count(job) == count
    assert workload_from_job(job)["spec"]["podSets"][0]["count"] == count


def test_succeeded_pods_do_not_change_the_count() -> None:
    job = minimal_job(parallelism=4, completions=6)
    job["status"] = {"succeeded": 3}
    assert workload_from_job(job)["spec"]["podSets"][0]["count"] == 4


def test_negative_or_non_integer_parallelism_is_rejected() -> None:
    with pytest.raises(JobConversionError) as err:
        workload_from_job(minimal_job(parallelism=-1))
    assert err.value.path == "spec.parallelism"
    assert err.value.message == "Invalid value: -1: must be greater than or equal to 0"
    with pytest.raises(JobConversionError) as err:
        workload_from_job(minimal_job(completions="3"))
    assert err.value.path == "spec.completions"


@pytest.mark.parametrize(("annotation", "min_count"), [("2", 2), ("+3", 3), ("4", 4)])
def test_valid_min_parallelism_becomes_min_count(annotation: str, min_count: int) -> None:
    job = minimal_job(parallelism=5)
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": annotation}
    pod_set = workload_from_job(job)["spec"]["podSets"][0]
    assert pod_set["count"] == 5
    assert pod_set["minCount"] == min_count
    assert min_pods_count(job) == min_count


def test_no_min_parallelism_no_min_count() -> None:
    pod_set = workload_from_job(minimal_job(parallelism=5))["spec"]["podSets"][0]
    assert "minCount" not in pod_set


MIN_PARALLELISM_PATH = "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]"


@pytest.mark.parametrize(
    ("parallelism", "completions", "annotation", "message"),
    [
        (5, None, "abc", 'Invalid value: "abc": strconv.Atoi: parsing "abc": invalid syntax'),
        (5, None, " 2", 'Invalid value: " 2": strconv.Atoi: parsing " 2": invalid syntax'),
        (5, None, "2.5", 'Invalid value: "2.5": strconv.Atoi: parsing "2.5": invalid syntax'),
        (5, None, "", 'Invalid value: "": strconv.Atoi: parsing "": invalid syntax'),
        (5, None, "0", "Invalid value: 0: should be between 0 and 4"),
        (5, None, "-1", "Invalid value: -1: should be between 0 and 4"),
        (5, None, "5", "Invalid value: 5: should be between 0 and 4"),
        (5, None, "7", "Invalid value: 7: should be between 0 and 4"),
        # The bound is the pod count, so completions below parallelism lowers it.
        (5, 3, "3", "Invalid value: 3: should be between 0 and 2"),
        # A Job of one pod cannot be partially admitted at all.
        (None, None, "1", "Invalid value: 1: should be between 0 and 0"),
    ],
)
def test_invalid_min_parallelism_is_rejected_like_the_webhook(
    parallelism: int | None, completions: int | None, annotation: str, message: str
) -> None:
    job = minimal_job(parallelism=parallelism, completions=completions)
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": annotation}
    with pytest.raises(JobConversionError) as err:
        workload_from_job(job)
    assert err.value.path == MIN_PARALLELISM_PATH
    assert err.value.message == message
    assert str(err.value) == f"{MIN_PARALLELISM_PATH}: {message}"


def test_priority_class_label_wins_over_pod_priority_class_name() -> None:
    job = minimal_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "batch-high"
    job["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical"
    workload = workload_from_job(job)
    assert workload["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "batch-high",
    }
    assert "priority" not in workload["spec"]
    # The pod template keeps its own class: it matters to kube-scheduler, not to Kueue.
    assert (
        workload["spec"]["podSets"][0]["template"]["spec"]["priorityClassName"] == "system-cluster-critical"
    )


def test_pod_priority_class_name_alone() -> None:
    job = minimal_job()
    job["spec"]["template"]["spec"]["priorityClassName"] = "low"
    assert priority_class_ref(job) == {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "low"}


def test_no_priority_class_leaves_the_ref_out() -> None:
    workload = workload_from_job(minimal_job())
    assert "priorityClassRef" not in workload["spec"]
    assert workload["spec"]["active"] is True


def test_queue_name_comes_from_the_label_only() -> None:
    job = minimal_job()
    assert queue_name(job) == "user-queue"
    assert is_managed(job) is True

    legacy = minimal_job()
    del legacy["metadata"]["labels"]
    legacy["metadata"]["annotations"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    assert queue_name(legacy) is None
    assert is_managed(legacy) is False
    assert "queueName" not in workload_from_job(legacy)["spec"]


def test_queue_name_must_be_a_resource_name() -> None:
    job = minimal_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Team_A"
    with pytest.raises(JobConversionError) as err:
        workload_from_job(job)
    assert err.value.path == "metadata.labels[kueue.x-k8s.io/queue-name]"
    assert err.value.message.startswith('Invalid value: "Team_A": a lowercase RFC 1123 subdomain')


def test_max_execution_time_label() -> None:
    job = minimal_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "600"
    assert workload_from_job(job)["spec"]["maximumExecutionTimeSeconds"] == 600

    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "0"
    with pytest.raises(JobConversionError) as err:
        workload_from_job(job)
    assert err.value.path == "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]"
    assert err.value.message == "Invalid value: 0: should be greater than 0"


def test_completions_equal_parallelism_needs_an_indexed_job() -> None:
    job = minimal_job(parallelism=4, completions=4)
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/job-completions-equal-parallelism": "true"}
    errors = validate_job(job)
    assert [(e.path, e.message) for e in errors] == [
        (
            "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]",
            'Invalid value: "true": should not be enabled for NonIndexed jobs',
        )
    ]
    job["spec"]["completionMode"] = "Indexed"
    assert validate_job(job) == []


def test_validate_job_reports_every_problem() -> None:
    job = minimal_job(parallelism=3)
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "UPPER"
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "ten"
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "3"}
    assert [e.path for e in validate_job(job)] == [
        "metadata.labels[kueue.x-k8s.io/queue-name]",
        "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]",
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
    ]


def test_label_keys_to_copy() -> None:
    job = load(TRAINING_JOB)
    workload = workload_from_job(job, label_keys_to_copy=["app", "missing", "kueue.x-k8s.io/job-uid"])
    assert workload["metadata"]["labels"] == {
        "app": "resnet",
        "kueue.x-k8s.io/job-uid": "6f1c2a0e-8d3b-4c57-9a4e-2b7f0c9d1e55",
    }


def test_topology_request_from_template_annotations() -> None:
    job = minimal_job(parallelism=8)
    job["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack"}
    }
    pod_set = workload_from_job(job)["spec"]["podSets"][0]
    assert pod_set["topologyRequest"] == {
        "required": "cloud.example.com/rack",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    }
