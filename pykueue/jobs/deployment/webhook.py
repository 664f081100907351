"""Upstream's Deployment webhooks (``pkg/controller/jobs/deployment``): the mutating one marks the pod
template so that each replica is a plain Pod of the pod integration, queued and gated one by one, with
the Deployment's queue and WorkloadPriorityClass; the validating one applies the serving queue rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import managed
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import (
    QUEUE_NAME_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    labels_of,
    meta_of,
    queue_name,
)
from pykueue.jobs.pod.groups import template_ops
from pykueue.jobs.pod.serving import queue_rules
from pykueue.jobs.pod.workload import SUSPENDED_BY_PARENT


def deployment_defaults(deployment: Mapping[str, Any], manage_without_queue_name: bool,
                        scope: managed.Scope = managed.DEFAULT_SCOPE) -> list[dict[str, Any]]:
    """Upstream's Deployment webhook: its Pods carry the queue name and the WorkloadPriorityClass
    (each Pod is a Workload of its own, with the Deployment's priority) and are gated one by one."""
    queue = queue_name(deployment)
    if not managed.suspended_on_create(queue, meta_of(deployment).get("namespace") or "", manage_without_queue_name, scope):
        return []
    labels = {QUEUE_NAME_LABEL: queue} if queue else {}
    if priority_class := labels_of(deployment).get(WORKLOAD_PRIORITY_CLASS_LABEL):
        labels[WORKLOAD_PRIORITY_CLASS_LABEL] = priority_class
    return template_ops(deployment, labels, {SUSPENDED_BY_PARENT: "deployment"})



def validate_deployment_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    """The Deployment webhook's ``ValidateUpdate``."""
    return queue_rules(old, new)
