"""What upstream's Deployment (``vdeployment``) and StatefulSet (``vstatefulset``) webhooks refuse.

Both are serving workloads: they count as suspended while none of their replicas is ready. On create
only the queue-name label is checked (a resource name). On update the label is checked again; a
WorkloadPriorityClass follows the shared rule (``generic_update.priority_class``); the queue name may
not change once a replica is ready, nor be dropped at all. A StatefulSet Kueue queues also keeps its
pod template's shape and its size: its replicas change only to or from 0, and not back up while pods
of the scale-down are still there. A StatefulSet another integration marked (a LeaderWorkerSet's) is
not checked at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import batch, generic_update, statefulset
from pykueue.jobs.batch import JobConversionError
from pykueue.jobs.generic_update import label, label_path
from pykueue.jobs.pod_shape import immutable_shape_errors


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def _ready(obj: Mapping[str, Any]) -> int:
    value = (obj.get("status") or {}).get("readyReplicas") or 0
    return value if isinstance(value, int) else 0


def _replicas(obj: Mapping[str, Any], where: str = "spec") -> int:
    value = (obj.get(where) or {}).get("replicas", 1 if where == "spec" else 0)
    if value is None:
        return 1 if where == "spec" else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def validate_create(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateCreate`` of both webhooks: ``ValidateQueueName``."""
    return generic_update.queue_name_errors(obj)


def _queue_rules(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    key = batch.QUEUE_NAME_LABEL
    suspended = _ready(old) == 0
    errors = generic_update.queue_name_errors(new)
    errors += generic_update.priority_class(old, new, suspended)
    if not suspended or not label(new, key):
        # upstream passes the old value first here, so the refusal names the old queue
        errors += generic_update.immutable(label_path(key), label(old, key), label(new, key))
    return errors


def validate_deployment_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    """The Deployment webhook's ``ValidateUpdate``."""
    return _queue_rules(old, new)


def validate_statefulset_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    """The StatefulSet webhook's ``ValidateUpdate``. One whose pod template another framework marked
    (a LeaderWorkerSet's) is that framework's and passes. Otherwise the queue rules, then, for one
    Kueue manages (its template marked by the mutating webhook, or a queue label), the rules that keep
    its Workload true: the pod template's shape (what admission read: requests, ports, node selector,
    affinity, tolerations, ...) never changes, so a rolling update may change an image but not what
    was admitted; and the pod count is fixed, so it scales only to or from 0."""
    if statefulset.managed_by_another_framework(new):
        return []
    errors = _queue_rules(old, new)
    if not (statefulset.managed(new) or label(new, batch.QUEUE_NAME_LABEL)):
        return errors
    errors += immutable_shape_errors(_pod_spec(new), _pod_spec(old), "spec.template.spec")
    before, after = _replicas(old), _replicas(new)
    if before != 0 and after != 0:
        errors += generic_update.immutable("spec.replicas", after, before)
    if before == 0 and after > 0 and _replicas(new, "status") > 0:
        errors.append(JobConversionError("spec.replicas", "Forbidden: scaling down is still in progress"))
    return errors
