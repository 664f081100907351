"""What a user may change on a batch/v1 Job, and when: upstream's Job webhook on update
(``ValidateJobOnUpdate`` of the job framework and the Job's ``validatePartialAdmissionUpdate``).

A running Job keeps its queue, its prebuilt Workload and its execution limit; a WorkloadPriorityClass
can be changed at any time, added only while the Job is suspended, and never removed; a running Job
admitted partially keeps its parallelism. Each refusal is ``(path, message)`` in upstream's words, as
``batch.validate_job`` gives them for a create.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import batch
from pykueue.jobs.batch import JobConversionError

STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
IMMUTABLE = "field is immutable"


def _label(job: Mapping[str, Any], key: str) -> str:
    return str(((job.get("metadata") or {}).get("labels") or {}).get(key) or "")


def _annotation(job: Mapping[str, Any], key: str) -> str | None:
    return ((job.get("metadata") or {}).get("annotations") or {}).get(key)


def is_suspended(job: Mapping[str, Any]) -> bool:
    """Upstream's ``Job.IsSuspended``: suspended, and not half-way through Kueue's stop."""
    return (job.get("spec") or {}).get("suspend") is True and _annotation(job, STOPPING_ANNOTATION) != "true"


def _immutable(path_key: str, new: str, old: str) -> list[JobConversionError]:
    # apimachinery's ValidateImmutableField: the new value, quoted
    return [] if new == old else [JobConversionError(f"metadata.labels[{path_key}]", f'Invalid value: "{new}": {IMMUTABLE}')]


def _priority_class(old: Mapping[str, Any], new: Mapping[str, Any], suspended: bool) -> list[JobConversionError]:
    key = batch.WORKLOAD_PRIORITY_CLASS_LABEL
    path = f"metadata.labels[{key}]"
    before, after = _label(old, key), _label(new, key)
    if not suspended and not before and after:
        return [JobConversionError(path, f'Invalid value: "{after}": WorkloadPriorityClass cannot be added to a '
                                         "non-suspended workload")]
    if before and not after:
        return [JobConversionError(path, 'Invalid value: "": WorkloadPriorityClass cannot be removed from a workload')]
    return []


def _partial_admission(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobConversionError]:
    errors: list[JobConversionError] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if (_annotation(old, batch.JOB_MIN_PARALLELISM_ANNOTATION) is not None and old_spec.get("suspend") is not True
            and old_spec.get("parallelism", 1) != new_spec.get("parallelism", 1)):
        errors.append(JobConversionError("spec.parallelism", "Forbidden: cannot change when partial admission is "
                                                             "enabled and the job is not suspended"))
    if (is_suspended(old) == is_suspended(new) and not is_suspended(new)
            and batch.completions_follow_parallelism(old) != batch.completions_follow_parallelism(new)):
        key = batch.JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION
        errors.append(JobConversionError(f"metadata.annotations[{key}]",
                                         f"Forbidden: {IMMUTABLE} while the job is not suspended"))
    return errors


def validate_job_update(old: Mapping[str, Any], new: Mapping[str, Any],
                        default_queue_exists: Callable[[str], bool]) -> list[JobConversionError]:
    """Every reason upstream's Job webhook refuses replacing ``old`` with ``new``, in its order: the
    new Job's own problems, then the update rules. ``default_queue_exists(namespace)`` says whether the
    namespace has a LocalQueue named ``default`` (LocalQueueDefaulting: the label may not be dropped)."""
    changed = (_annotation(new, batch.JOB_MIN_PARALLELISM_ANNOTATION)
               != _annotation(old, batch.JOB_MIN_PARALLELISM_ANNOTATION))
    errors = batch.validate_job(new, min_parallelism=changed)
    suspended, was_suspended = is_suspended(new), is_suspended(old)
    queue_key = batch.QUEUE_NAME_LABEL
    if not suspended:
        errors += _immutable(queue_key, _label(new, queue_key), _label(old, queue_key))
    namespace = str((old.get("metadata") or {}).get("namespace") or "")
    if not _label(new, queue_key) and _label(old, queue_key) and default_queue_exists(namespace):
        errors.append(JobConversionError(f"metadata.labels[{queue_key}]",
                                         'Invalid value: "": queue-name must not be empty in namespace with default queue'))
    if not suspended:
        key = batch.PREBUILT_WORKLOAD_LABEL
        errors += _immutable(key, _label(new, key), _label(old, key))
    if not suspended or not was_suspended:
        key = batch.MAX_EXEC_TIME_SECONDS_LABEL
        errors += _immutable(key, _label(new, key), _label(old, key))
    errors += _priority_class(old, new, suspended)
    errors += _partial_admission(old, new)
    return errors
