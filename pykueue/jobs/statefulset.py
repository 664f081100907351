"""The StatefulSet integration, as upstream's (``pkg/controller/jobs/statefulset``): its webhook puts
the queue-name label on the pod template and makes the replicas one pod group, named
``GetWorkloadName(sts)`` (``statefulset-NAME-<hash>``), of ``pod-group-total-count = replicas``,
with the fast-admission and serving annotations. So the StatefulSet is one Workload, admitted all or
nothing: a serving workload that never finishes by itself. Fast admission builds the group's
Workload as soon as its first Pod exists, so ``podManagementPolicy`` (``OrderedReady`` creates
``NAME-1`` only once ``NAME-0`` runs) does not change what is queued. ``replicas: 0`` creates no Pod
and no Workload. The framework implicitly enables ``pod`` (upstream v0.15+).

The Pods are ``NAME-0`` .. ``NAME-<replicas-1>`` as the StatefulSet controller names them; pod set
and count as upstream's pod-group reconciler builds them: one pod set per Pod shape (all replicas
share the template, so one), named by the shape's hash."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.batch import QUEUE_NAME_LABEL, Manifest, workload_name_for_owner
from pykueue.jobs.deployment import replicas, validate
from pykueue.jobs.pod import (
    GROUP_FAST_ADMISSION,
    GROUP_NAME_LABEL,
    GROUP_SERVING,
    GROUP_TOTAL_COUNT,
    SUSPENDED_BY_PARENT,
    pod_from_template,
    workload_from_pod,
)

FRAMEWORK = "statefulset"
IMPLIES = ("pod",)  # upstream's ImplicitlyEnabledFrameworkNames
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def group_name(sts: Mapping[str, Any]) -> str:
    """The pod group's (and so the Workload's) name: ``GetWorkloadName`` of the StatefulSet."""
    meta = sts.get("metadata") or {}
    # uid "": the webhook names the group before the StatefulSet exists, so upstream's name has no UID
    return workload_name_for_owner("StatefulSet", "apps", meta.get("name", ""), "")


def pods(sts: Mapping[str, Any]) -> list[Manifest]:
    """The replicas' Pods, ``NAME-0`` .. ``NAME-<replicas-1>``, with the webhook's group marks."""
    meta = sts.get("metadata") or {}
    count = replicas(sts)
    labels = {GROUP_NAME_LABEL: group_name(sts)}
    if (meta.get("labels") or {}).get(QUEUE_NAME_LABEL):
        labels[QUEUE_NAME_LABEL] = meta["labels"][QUEUE_NAME_LABEL]
    marks = {
        SUSPENDED_BY_PARENT: FRAMEWORK,
        GROUP_TOTAL_COUNT: str(count),
        GROUP_FAST_ADMISSION: "true",
        GROUP_SERVING: "true",
        POD_INDEX_LABEL_ANNOTATION: POD_INDEX_LABEL,
    }
    name = meta.get("name", "")
    return [pod_from_template(sts, f"{name}-{i}", {**labels, POD_INDEX_LABEL: str(i)}, marks)
            for i in range(count)]


def workload_from_statefulset(sts: Mapping[str, Any], role: str) -> Manifest | None:
    """The group's Workload (``None`` for ``replicas: 0``): the first Pod's Workload renamed as the
    group, its one pod set named ``role`` (the shape hash of the template's spec) with count
    ``replicas``, owned by every Pod. Raises ``JobConversionError`` for a StatefulSet the API server
    or Kueue's webhook would refuse."""
    errors = validate(sts)
    if errors:
        raise errors[0]
    members = pods(sts)
    if not members:
        return None
    built = workload_from_pod(members[0])
    built["metadata"]["name"] = group_name(sts)
    owners = []
    for pod in members:
        owner = copy.deepcopy(built["metadata"]["ownerReferences"][0])
        owner["name"] = pod["metadata"]["name"]
        owners.append(owner)
    built["metadata"]["ownerReferences"] = owners
    pod_set = built["spec"]["podSets"][0]
    pod_set["name"] = role
    pod_set["count"] = len(members)
    return built
