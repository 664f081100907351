"""The rules every integration's validating webhook shares: upstream's ``jobframework``
``ValidateJobOnCreate`` / ``ValidateJobOnUpdate`` and the priority-class rule, over plain manifests.

Each integration says what "suspended" means for its kind (a Job's ``spec.suspend``, a Pod's
scheduling gate, a Deployment without ready replicas) and passes it in; the rules themselves and their
messages are upstream's, as ``field.ErrorList`` prints them (``<path>: <message>``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs.framework.validation import JobConversionError, quote
from pykueue.jobs.framework.workload import (
    ELASTIC_JOB_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    owner_label_errors,
)

IMMUTABLE = "field is immutable"


def label(obj: Mapping[str, Any], key: str) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(key) or "")


def annotation(obj: Mapping[str, Any], key: str) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key)


def printed(value: Any) -> str:
    """How ``field.Invalid`` prints a value: strings quoted, numbers and booleans bare, anything else
    (a map, a list, an unset value) as its JSON."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return quote(value)
    return json.dumps(value, separators=(",", ":"))


def immutable(path: str, new: Any, old: Any) -> list[JobConversionError]:
    """apimachinery's ``ValidateImmutableField(new, old, path)``: the first value is the one printed."""
    return [] if new == old else [JobConversionError(path, f"Invalid value: {printed(new)}: {IMMUTABLE}")]


def label_path(key: str) -> str:
    return f"metadata.labels[{key}]"


def elastic(obj: Mapping[str, Any]) -> bool:
    """``workloadslicing.Enabled``: the elastic-job annotation is "true" (the gate is on by default)."""
    return annotation(obj, ELASTIC_JOB_ANNOTATION) == "true"


def queue_name_errors(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateQueueName``: the queue-name label, when set, is a resource name."""
    key = QUEUE_NAME_LABEL
    return [e for e in owner_label_errors(obj) if e.path == label_path(key)]


def on_create(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateJobOnCreate``: queue-name and prebuilt-workload labels are resource names, the
    execution limit a positive integer."""
    return owner_label_errors(obj)


def priority_class(old: Mapping[str, Any], new: Mapping[str, Any], suspended: bool) -> list[JobConversionError]:
    """``ValidateUpdateForWorkloadPriorityClassName``: a WorkloadPriorityClass may change at any time,
    be added only while suspended, and never be removed."""
    key = WORKLOAD_PRIORITY_CLASS_LABEL
    before, after = label(old, key), label(new, key)
    if not suspended and not before and after:
        return [JobConversionError(label_path(key), f'Invalid value: "{after}": WorkloadPriorityClass cannot be '
                                                    "added to a non-suspended workload")]
    if before and not after:
        return [JobConversionError(label_path(key),
                                   'Invalid value: "": WorkloadPriorityClass cannot be removed from a workload')]
    return []


def on_update(old: Mapping[str, Any], new: Mapping[str, Any], *, suspended: bool, was_suspended: bool,
              default_queue_exists: Callable[[str], bool]) -> list[JobConversionError]:
    """``ValidateJobOnUpdate``, in upstream's order: a running object keeps its queue, its prebuilt
    Workload and its execution limit; a queue label is never dropped where a LocalQueue named
    ``default`` exists; the priority-class rule; the elastic-job annotation never changes."""
    queue_key = QUEUE_NAME_LABEL
    errors: list[JobConversionError] = []
    if not suspended:
        errors += immutable(label_path(queue_key), label(new, queue_key), label(old, queue_key))
    namespace = str((old.get("metadata") or {}).get("namespace") or "")
    if not label(new, queue_key) and label(old, queue_key) and default_queue_exists(namespace):
        errors.append(JobConversionError(label_path(queue_key), 'Invalid value: "": queue-name must not be empty '
                                                                "in namespace with default queue"))
    key = PREBUILT_WORKLOAD_LABEL
    if suspended or elastic(old):  # free to change, but still a resource name
        errors += [e for e in owner_label_errors(new) if e.path == label_path(key)]
    else:
        errors += immutable(label_path(key), label(new, key), label(old, key))
    if not suspended or not was_suspended:
        key = MAX_EXEC_TIME_SECONDS_LABEL
        errors += immutable(label_path(key), label(new, key), label(old, key))
    errors += priority_class(old, new, suspended)
    if elastic(old) != elastic(new):
        errors.append(JobConversionError(label_path(ELASTIC_JOB_ANNOTATION),
                                         f"Invalid value: {str(elastic(new)).lower()}: {IMMUTABLE}"))
    return errors
