"""The job framework: one interface every integration implements, and one reconcile rule that drives them
(upstream's ``pkg/controller/jobframework``).

Upstream keeps each integration behind ``jobframework.GenericJob`` and one ``JobReconciler``; here the
same split is pure. An integration wraps the API objects it manages (a Job, a Pod, the Pods of a group)
in a ``GenericJob`` (``interface.py``); ``reconcile`` (``reconcile.py``) reads it and the Workload's cached
copy and returns the writes (``actions.py``) that bring the two together, in upstream's order (finalize,
finish, create, reclaimable pods, pods-ready, stop, start). The controller carries the writes out
(``pykueue.controller.jobs.reconciler``); nothing here does I/O, so the rule is tested without a cluster and shared
by every kind.

Beneath the rule, what every kind shares when it builds and starts its Workload: ``workload.py`` (the
labels and annotations Kueue reads and writes, queue names, Workload names, ``owner_workload``: upstream's
ConstructWorkload), ``podset.py`` (PodSetInfo: what an admission injects into a pod template and what
a stop restores, upstream's ``pkg/podset``) and ``validation.py`` (what the API server and Go's parsing
accept, in their words). Those are imported from their modules (``framework.workload.queue_name``).

This module re-exports the package's public names: ``framework.reconcile``, ``framework.Patch``,
``framework.GenericJob``...
"""

from pykueue.jobs.framework.actions import (
    ERR_WORKLOAD_COMPOSE,
    Action,
    CreateWorkload,
    Delete,
    Event,
    Hold,
    JobStopped,
    Note,
    Patch,
    ReclaimablePods,
    Replace,
    SetPriority,
    Warn,
    WorkloadConditions,
)
from pykueue.jobs.framework.interface import GenericJob, OneObject, SuspendFlag, TemplatesBySuspend
from pykueue.jobs.framework.reconcile import (
    CLUSTER_QUEUE_LABEL,
    FAILED_TO_START,
    FINISHED_FAILED,
    FINISHED_SUCCEEDED,
    LOCAL_QUEUE_LABEL,
    NOT_READY_MESSAGE,
    READY_MESSAGE,
    RECOVERED,
    RECOVERY_MESSAGE,
    STARTED,
    WAIT_FOR_RECOVERY,
    WAIT_FOR_START,
    admitted,
    finished_workload,
    infos_for,
    mismatch,
    new_queue,
    pods_ready_condition,
    priority_changed,
    reconcile,
    releasing,
    source_objects,
    with_labels,
)

__all__ = [
    "CLUSTER_QUEUE_LABEL", "ERR_WORKLOAD_COMPOSE", "FAILED_TO_START", "FINISHED_FAILED", "FINISHED_SUCCEEDED",
    "LOCAL_QUEUE_LABEL", "NOT_READY_MESSAGE", "READY_MESSAGE", "RECOVERED", "RECOVERY_MESSAGE", "STARTED",
    "WAIT_FOR_RECOVERY", "WAIT_FOR_START", "Action", "CreateWorkload", "Delete", "Event", "GenericJob",
    "Hold", "JobStopped", "Note", "OneObject", "Patch", "ReclaimablePods", "Replace", "SetPriority", "SuspendFlag",
    "TemplatesBySuspend", "Warn", "WorkloadConditions", "admitted", "finished_workload", "infos_for",
    "mismatch", "new_queue", "pods_ready_condition", "priority_changed", "reconcile", "releasing",
    "source_objects", "with_labels",
]
