"""What upstream's Pod webhook (``vpod``) refuses, on create and on update, over plain manifests.

A Pod carries its group in labels and annotations that must agree: a ``pod-group-name`` label and a
``pod-group-total-count`` annotation come together, the name is a resource name and the count a positive
integer; the ``kueue.x-k8s.io/managed`` label, when set, says ``true``; a prebuilt Workload of a group is
the group's own. While a Pod is released from Kueue's scheduling gate it keeps its queue (the rules
every integration shares, ``generic_update``); a Pod keeps its group, and an unretriable group member
(``retriable-in-group: false``) never becomes retriable again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update, hooks
from pykueue.jobs.framework.validation import JobConversionError, dns1123_subdomain_errors, go_atoi, quote
from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL
from pykueue.jobs.generic_update import annotation, label, label_path
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.pod import groups
from pykueue.jobs.pod.workload import GROUP_NAME_LABEL, GROUP_TOTAL_COUNT, SUSPENDED_BY_PARENT

GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
RETRIABLE_IN_GROUP = "kueue.x-k8s.io/retriable-in-group"
TOTAL_COUNT_PATH = f"metadata.annotations[{GROUP_TOTAL_COUNT}]"
BOTH = f"both the '{GROUP_TOTAL_COUNT}' annotation and the '{GROUP_NAME_LABEL}' label should be set"


def gated(pod: Mapping[str, Any]) -> bool:
    """Upstream's ``Pod.IsSuspended``: Kueue's scheduling gate is still on it."""
    return any(isinstance(g, Mapping) and g.get("name") == GATE
               for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def total_count_error(value: str) -> str | None:
    """Why ``groupTotalCount`` refuses the annotation's value, in upstream's words; None when valid."""
    try:
        count = go_atoi(value)
    except ValueError as err:
        return str(err)
    if count < 1:
        return f"incorrect annotation value '{GROUP_TOTAL_COUNT}={value}': group total count should be greater than zero"
    return None


def _group_metadata(pod: Mapping[str, Any]) -> list[JobConversionError]:
    errors: list[JobConversionError] = []
    count = annotation(pod, GROUP_TOTAL_COUNT)
    if not label(pod, GROUP_NAME_LABEL):
        if count is not None:
            return [JobConversionError(label_path(GROUP_NAME_LABEL), f"Required value: {BOTH}")]
    else:
        problems = dns1123_subdomain_errors(label(pod, GROUP_NAME_LABEL))
        if problems:
            errors.append(JobConversionError(label_path(GROUP_NAME_LABEL),
                                             f"Invalid value: {quote(label(pod, GROUP_NAME_LABEL))}: "
                                             f"{','.join(problems)}"))
        if count is None:
            return [*errors, JobConversionError(TOTAL_COUNT_PATH, f"Required value: {BOTH}")]
    if count is not None and (problem := total_count_error(count)) is not None:
        errors.append(JobConversionError(TOTAL_COUNT_PATH, f"Invalid value: {quote(count)}: {problem}"))
    return errors


def _common(pod: Mapping[str, Any]) -> list[JobConversionError]:
    """``validateCommon``: the managed label, the group's metadata, a group's prebuilt Workload."""
    errors: list[JobConversionError] = []
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if MANAGED_LABEL in labels and labels[MANAGED_LABEL] != "true":
        errors.append(JobConversionError(label_path(MANAGED_LABEL), "Forbidden: managed label value can only be 'true'"))
    errors += _group_metadata(pod)
    group, prebuilt = label(pod, GROUP_NAME_LABEL), label(pod, PREBUILT_WORKLOAD_LABEL)
    if group and prebuilt and prebuilt != group:
        errors.append(JobConversionError(label_path(PREBUILT_WORKLOAD_LABEL),
                                         f'Invalid value: "{prebuilt}": prebuilt workload and pod group should be equal'))
    return errors


def validate_pod(pod: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateCreate``: the rules every integration shares, then the Pod's own."""
    return generic_update.on_create(pod) + _common(pod)


def _unretriable(pod: Mapping[str, Any]) -> bool:
    return annotation(pod, RETRIABLE_IN_GROUP) == "false"


def validate_pod_update(old: Mapping[str, Any], new: Mapping[str, Any],
                        default_queue_exists: Callable[[str], bool]) -> list[JobConversionError]:
    """``ValidateUpdate``: the shared update rules (suspended meaning gated), the new Pod's own rules,
    an unretriable group never made retriable, and a Pod's group never changed."""
    errors = generic_update.on_update(old, new, suspended=gated(new), was_suspended=gated(old),
                                      default_queue_exists=default_queue_exists)
    errors += _common(new)
    if label(new, GROUP_NAME_LABEL) and _unretriable(old) and not _unretriable(new):
        errors.append(JobConversionError(f"metadata.annotations[{RETRIABLE_IN_GROUP}]",
                                         "Forbidden: unretriable pod group can't be converted to retriable"))
    if label(old, GROUP_NAME_LABEL):
        errors += generic_update.immutable(label_path(GROUP_NAME_LABEL), label(new, GROUP_NAME_LABEL),
                                           label(old, GROUP_NAME_LABEL))
    return errors


def default(pod: dict[str, Any], ctx: HookContext) -> list[dict[str, Any]]:
    """Upstream's Pod ``Default``: LocalQueueDefaulting for a Pod the webhook would gate with the label
    (its namespace selected, no managed owner, not handed over by its Deployment or StatefulSet), then
    the gate, label and finalizer, and the labels its parent's integration names for it."""
    ops: list[dict[str, Any]] = []
    if SUSPENDED_BY_PARENT not in ((pod.get("metadata") or {}).get("annotations") or {}):
        labelled, label_ops = hooks.default_queue(pod, ctx, False)
        if label_ops and groups.manages_pod(labelled, ctx.frameworks, ctx.manage_without_queue_name, ctx.scope):
            pod, ops = labelled, label_ops
    return ops + groups.pod_defaults(pod, ctx.frameworks, ctx.manage_without_queue_name, ctx.scope, ctx.pod_marks)


def hook_create(pod: Mapping[str, Any], _ctx: HookContext) -> list[JobConversionError]:
    return validate_pod(pod)


def hook_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return validate_pod_update(old, new, ctx.default_queue_exists)
