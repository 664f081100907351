"""What a user may change on a batch/v1 Job, and when: upstream's Job webhook on update
(``ValidateJobOnUpdate`` of the job framework and the Job's ``validatePartialAdmissionUpdate``).

A running Job keeps its queue, its prebuilt Workload and its execution limit; a WorkloadPriorityClass
can be changed at any time, added only while the Job is suspended, and never removed; a running Job
admitted partially keeps its parallelism. Each refusal is ``(path, message)`` in upstream's words, as
``workload.validate_job`` gives them for a create.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update, hooks, slicing
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.job.workload import (
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    completions_follow_parallelism,
    validate_job,
)
from pykueue.jobs.slicing import SCHEDULING_GATE

STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
IMMUTABLE = generic_update.IMMUTABLE


def _annotation(job: Mapping[str, Any], key: str) -> str | None:
    return generic_update.annotation(job, key)


def is_suspended(job: Mapping[str, Any]) -> bool:
    """Upstream's ``Job.IsSuspended``: suspended, and not half-way through Kueue's stop."""
    return (job.get("spec") or {}).get("suspend") is True and _annotation(job, STOPPING_ANNOTATION) != "true"


def _partial_admission(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    errors: list[JobConversionError] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if (_annotation(old, JOB_MIN_PARALLELISM_ANNOTATION) is not None and old_spec.get("suspend") is not True
            and old_spec.get("parallelism", 1) != new_spec.get("parallelism", 1)):
        errors.append(JobConversionError("spec.parallelism", "Forbidden: cannot change when partial admission is "
                                                             "enabled and the job is not suspended"))
    if (is_suspended(old) == is_suspended(new) and not is_suspended(new)
            and completions_follow_parallelism(old) != completions_follow_parallelism(new)):
        key = JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION
        errors.append(JobConversionError(f"metadata.annotations[{key}]",
                                         f"Forbidden: {IMMUTABLE} while the job is not suspended"))
    return errors


def validate_job_update(old: Mapping[str, Any], new: Mapping[str, Any],
                        default_queue_exists: Callable[[str], bool]) -> list[JobConversionError]:
    """Every reason upstream's Job webhook refuses replacing ``old`` with ``new``, in its order: the
    new Job's own problems, then the update rules. ``default_queue_exists(namespace)`` says whether the
    namespace has a LocalQueue named ``default`` (LocalQueueDefaulting: the label may not be dropped)."""
    changed = (_annotation(new, JOB_MIN_PARALLELISM_ANNOTATION)
               != _annotation(old, JOB_MIN_PARALLELISM_ANNOTATION))
    errors = validate_job(new, min_parallelism=changed)
    errors += generic_update.on_update(old, new, suspended=is_suspended(new), was_suspended=is_suspended(old),
                                       default_queue_exists=default_queue_exists)
    errors += _partial_admission(old, new)
    return errors


def template_gate_ops(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Job webhook's default for an elastic job: its pod template carries the elastic-job gate."""
    spec = ((job.get("spec") or {}).get("template") or {}).get("spec")
    if not isinstance(spec, dict):
        return []
    gates = spec.get("schedulingGates")
    if not gates:
        return [{"op": "add", "path": "/spec/template/spec/schedulingGates", "value": [{"name": SCHEDULING_GATE}]}]
    if any(isinstance(g, dict) and g.get("name") == SCHEDULING_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/template/spec/schedulingGates/-", "value": {"name": SCHEDULING_GATE}}]


OWN_CONTROLLER = "kubernetes.io/job-controller"  # spec.managedBy's value for the Job controller


def default(job: dict[str, Any], ctx: HookContext) -> list[dict[str, Any]]:
    """Upstream's Job ``Default``: the job framework's (LocalQueueDefaulting, suspend, managedBy), and an
    elastic Job's pods wait for their slice's admission."""
    return hooks.suspend_default(job, ctx, OWN_CONTROLLER,
                                 lambda labelled: template_gate_ops(labelled) if slicing.enabled(labelled) else [])


def validate_create(job: Mapping[str, Any], _ctx: HookContext) -> list[JobConversionError]:
    return validate_job(job)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return validate_job_update(old, new, ctx.default_queue_exists)
