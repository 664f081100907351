"""The Deployment integration, as upstream's (``pkg/controller/jobs/deployment``): Kueue does not
queue the Deployment itself. Its webhook copies the Deployment's ``kueue.x-k8s.io/queue-name`` and
``kueue.x-k8s.io/priority-class`` labels onto the pod template and marks it
``kueue.x-k8s.io/pod-suspending-parent: deployment``; every Pod the ReplicaSet then creates is a plain
Pod of the pod integration, one Workload each, so the replicas are admitted one by one and a
Deployment may run only some of them. The framework implicitly enables ``pod`` (upstream v0.15+).

Pod names: upstream's are ``NAME-<pod-template-hash>-<random>``; here replica ``i`` (0-based) is
``NAME-<i>``, a stable name a scenario can refer to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework.workload import QUEUE_NAME_LABEL, WORKLOAD_PRIORITY_CLASS_LABEL, Manifest
from pykueue.jobs.pod.serving import replicas, validate
from pykueue.jobs.pod.workload import SUSPENDED_BY_PARENT, pod_from_template, workload_from_pod

FRAMEWORK = "deployment"
IMPLIES = ("pod",)  # upstream's ImplicitlyEnabledFrameworkNames


def pod_names(deployment: Mapping[str, Any]) -> list[str]:
    """The replicas' Pod names, ``NAME-0`` .. ``NAME-<replicas-1>``."""
    name = (deployment.get("metadata") or {}).get("name", "")
    return [f"{name}-{i}" for i in range(replicas(deployment))]


def pods(deployment: Mapping[str, Any]) -> list[Manifest]:
    """The Pods of the Deployment's replicas as its webhook-marked template makes them."""
    labels = {}
    meta_labels = (deployment.get("metadata") or {}).get("labels") or {}
    for key in (QUEUE_NAME_LABEL, WORKLOAD_PRIORITY_CLASS_LABEL):
        if meta_labels.get(key):
            labels[key] = meta_labels[key]
    marks = {SUSPENDED_BY_PARENT: FRAMEWORK}
    return [pod_from_template(deployment, name, labels, marks) for name in pod_names(deployment)]


def workloads_from_deployment(deployment: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(pod name, Workload)`` for each replica, in replica order; raises ``JobConversionError``
    for a Deployment the API server or Kueue's webhook would refuse."""
    errors = validate(deployment)
    if errors:
        raise errors[0]
    return [(pod["metadata"]["name"], workload_from_pod(pod)) for pod in pods(deployment)]


def template_paths(deployment: Mapping[str, Any]) -> list[str]:
    return ["spec.template"]
