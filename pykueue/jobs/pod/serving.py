"""What the pod integration's parents that serve (upstream's Deployment and StatefulSet integrations)
share: the size and pod template the API server checks, and the queue rules both webhooks apply.

Both count as suspended while none of their replicas is ready. On create only the queue-name label is
checked (a resource name). On update the label is checked again; a WorkloadPriorityClass follows the
shared rule (``generic_update.priority_class``); the queue name may not change once a replica is
ready, nor be dropped at all (upstream's ``vdeployment`` and ``vstatefulset`` webhooks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update, hooks, managed
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import QUEUE_NAME_LABEL, owner_label_errors
from pykueue.jobs.generic_update import label, label_path
from pykueue.jobs.integration import Webhooks


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


def pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def ready(obj: Mapping[str, Any]) -> int:
    value = (obj.get("status") or {}).get("readyReplicas") or 0
    return value if isinstance(value, int) else 0


def replicas_in(obj: Mapping[str, Any], where: str = "spec") -> int:
    value = (obj.get(where) or {}).get("replicas", 1 if where == "spec" else 0)
    if value is None:
        return 1 if where == "spec" else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def validate_create(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateCreate`` of both webhooks: ``ValidateQueueName``."""
    return generic_update.queue_name_errors(obj)


def queue_rules(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    key = QUEUE_NAME_LABEL
    suspended = ready(old) == 0
    errors = generic_update.queue_name_errors(new)
    errors += generic_update.priority_class(old, new, suspended)
    if not suspended or not label(new, key):
        # upstream passes the old value first here, so the refusal names the old queue
        errors += generic_update.immutable(label_path(key), label(old, key), label(new, key))
    return errors


def webhooks(defaults: Callable[[Mapping[str, Any], bool, managed.Scope], list[dict[str, Any]]],
             update: Callable[[Mapping[str, Any], Mapping[str, Any]], list[JobConversionError]]) -> Webhooks:
    """A serving kind's webhooks: LocalQueueDefaulting, then ``defaults(obj, manageJobsWithoutQueueName,
    scope)`` marks its pod template; on create the queue rules, on update ``update(old, new)``."""
    return Webhooks(
        lambda obj, ctx: hooks.owner_default(obj, ctx, lambda labelled: defaults(
            labelled, ctx.manage_without_queue_name, ctx.scope)),
        lambda obj, _ctx: validate_create(obj),
        lambda old, new, _ctx: update(old, new))
