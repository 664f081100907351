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

from pykueue.jobs.batch import (
    QUEUE_NAME_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    JobConversionError,
    Manifest,
    owner_label_errors,
)
from pykueue.jobs.pod import SUSPENDED_BY_PARENT, pod_from_template, workload_from_pod

FRAMEWORK = "deployment"
IMPLIES = ("pod",)  # upstream's ImplicitlyEnabledFrameworkNames


def replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` of a Deployment or StatefulSet (default 1); the API server's rules."""
    value = (obj.get("spec") or {}).get("replicas", 1)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobConversionError("spec.replicas", f"Invalid value: {value!r}: must be an integer")
    if value < 0:
        raise JobConversionError("spec.replicas", f"Invalid value: {value}: must be greater than or equal to 0")
    return value


def template_errors(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """What the API server refuses in the pod template before any Pod exists."""
    template = (obj.get("spec") or {}).get("template")
    if not isinstance(template, Mapping):
        return [JobConversionError("spec.template", "Required value")]
    spec = template.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        return [JobConversionError("spec.template.spec.containers", "Required value")]
    return []


def validate(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """Every reason the API server or Kueue's webhook refuses a Deployment (or a StatefulSet)."""
    errors = owner_label_errors(obj) + template_errors(obj)
    try:
        replicas(obj)
    except JobConversionError as err:
        errors.append(err)
    return errors


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
