"""Upstream's StatefulSet webhooks (``pkg/controller/jobs/statefulset``): the mutating one marks the
pod template so that the replicas are one serving pod group; the validating one applies the serving
queue rules and, for a StatefulSet Kueue queues, keeps its pod template's shape and its size: its
replicas change only to or from 0, and not back up while pods of the scale-down are still there. A
StatefulSet another integration marked (a LeaderWorkerSet's) is not checked at all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import generic_update, managed
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL, meta_of, queue_name
from pykueue.jobs.generic_update import label
from pykueue.jobs.pod.groups import template_ops
from pykueue.jobs.pod.serving import pod_spec, queue_rules, replicas_in
from pykueue.jobs.pod.shape import immutable_shape_errors
from pykueue.jobs.pod.workload import GROUP_NAME_LABEL
from pykueue.jobs.statefulset import workload as statefulset


def statefulset_defaults(sts: Mapping[str, Any], manage_without_queue_name: bool,
                         scope: managed.Scope = managed.DEFAULT_SCOPE) -> list[dict[str, Any]]:
    """Upstream's StatefulSet webhook: its Pods are one serving group of ``replicas`` in the role
    ``main``, admitted as soon as the first exists (fast admission: the others are created one after
    another once it runs). The group's name needs the StatefulSet's UID: the Pod webhook adds it."""
    if statefulset.managed_by_another_framework(sts):
        return []
    queue = queue_name(sts)
    if not managed.suspended_on_create(queue, meta_of(sts).get("namespace") or "", manage_without_queue_name, scope):
        return []
    replicas = (sts.get("spec") or {}).get("replicas")
    labels, annotations = statefulset.template_marks(queue, 1 if replicas is None else replicas)
    if group := statefulset.copy_group(sts):
        labels.update({GROUP_NAME_LABEL: group, PREBUILT_WORKLOAD_LABEL: group})
    return template_ops(sts, labels, annotations)


def validate_statefulset_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    """The StatefulSet webhook's ``ValidateUpdate``. One whose pod template another framework marked
    (a LeaderWorkerSet's) is that framework's and passes. Otherwise the queue rules, then, for one
    Kueue manages (its template marked by the mutating webhook, or a queue label), the rules that keep
    its Workload true: the pod template's shape (what admission read: requests, ports, node selector,
    affinity, tolerations, ...) never changes, so a rolling update may change an image but not what
    was admitted; and the pod count is fixed, so it scales only to or from 0."""
    if statefulset.managed_by_another_framework(new):
        return []
    errors = queue_rules(old, new)
    if not (statefulset.managed(new) or label(new, QUEUE_NAME_LABEL)):
        return errors
    errors += immutable_shape_errors(pod_spec(new), pod_spec(old), "spec.template.spec")
    before, after = replicas_in(old), replicas_in(new)
    if before != 0 and after != 0:
        errors += generic_update.immutable("spec.replicas", after, before)
    if before == 0 and after > 0 and replicas_in(new, "status") > 0:
        errors.append(JobConversionError("spec.replicas", "Forbidden: scaling down is still in progress"))
    return errors
