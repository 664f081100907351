"""What upstream's Deployment (``vdeployment``) and StatefulSet (``vstatefulset``) webhooks refuse.

Both are serving workloads: they count as suspended while none of their replicas is ready. On create
only the queue-name label is checked (a resource name). On update the label is checked again; a
WorkloadPriorityClass follows the shared rule (``generic_update.priority_class``); the queue name may
not change once a replica is ready, nor be dropped at all. A StatefulSet Kueue queues also keeps its
size: its replicas change only to or from 0, and not back up while pods of the scale-down are still
there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import batch, generic_update
from pykueue.jobs.batch import JobConversionError
from pykueue.jobs.generic_update import label, label_path


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
    """The StatefulSet webhook's ``ValidateUpdate``: the queue rules, then the size rules for one
    Kueue queues (a queue label): its Workload's pod count is fixed, so it scales only to or from 0."""
    errors = _queue_rules(old, new)
    if not label(old, batch.QUEUE_NAME_LABEL):
        return errors
    before, after = _replicas(old), _replicas(new)
    if before != 0 and after != 0:
        errors += generic_update.immutable("spec.replicas", after, before)
    if before == 0 and after > 0 and _replicas(new, "status") > 0:
        errors.append(JobConversionError("spec.replicas", "Forbidden: scaling down is still in progress"))
    return errors
