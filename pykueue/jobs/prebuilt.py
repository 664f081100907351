"""A job naming a prebuilt Workload (the ``kueue.x-k8s.io/prebuilt-workload-name`` label): upstream's
ensureOneWorkload and handleJobWithNoWorkload for it.

The Workload is made by someone else and adopted, never created: while it is missing, or controlled by
another object, the job is kept stopped; once found it gets the job as its controller owner and the
job-uid label; a Workload that no longer matches its job (pod sets, counts, requests, execution limit)
is finished ``OutOfSync`` instead of being replaced, and the job, left without a Workload, is stopped. A
single Pod names one as a Job does (upstream's pod integration: its Workload's name is the prebuilt one);
a pod group's prebuilt Workload is the group's (the Pod webhook holds them equal) and is matched by the
group's own rule (``PodGroup.sync_workload``), finished ``OutOfSync`` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework import (
    Action,
    GenericJob,
    Note,
    OneObject,
    Patch,
    WorkloadConditions,
    finished_workload,
    mismatch,
)
from pykueue.jobs.framework.validation import is_valid_label_value
from pykueue.jobs.framework.workload import JOB_UID_LABEL, PREBUILT_WORKLOAD_LABEL

OUT_OF_SYNC = ("OutOfSync", "The prebuilt workload is out of sync with its user job")


def name_for(job: GenericJob) -> str | None:
    """The prebuilt Workload's name, for a Job, RayCluster, RayJob or single Pod that names one."""
    if not isinstance(job, OneObject) or not job.compared_whole:
        return None
    return (job.meta.get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) or None


def _controller(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for owner in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return owner
    return None


def adopt(job: OneObject, workload: Mapping[str, Any] | None) -> list[Action] | None:
    """The writes before the prebuilt ``workload`` (None: missing) stands for ``job``, or None when it
    already does. Upstream keeps the job stopped while there is none to adopt."""
    uid = job.meta.get("uid")
    owner = None if workload is None else _controller(workload)
    going = workload is not None and bool((workload.get("metadata") or {}).get("deletionTimestamp"))
    if workload is None or (owner is not None and owner.get("uid") != uid) or (going and owner is None):
        # a Workload being deleted gains no owner: its owners gone (a deleted LeaderWorkerSet's group),
        # one adopted now would outlive them, unowned, and never be garbage-collected
        why = "missing" if workload is None else "being deleted" if going and owner is None \
            else "controlled by another object"
        note = Note("prebuilt workload not adopted; job kept stopped", {"object": job.describe(), "why": why})
        return ([] if job.is_suspended() else job.suspend()) + [note]
    meta = workload["metadata"]
    if owner is None:
        ref = {"apiVersion": job.obj.get("apiVersion") or job.api_version, "kind": job.kind,
               "name": job.meta["name"], "uid": uid, "controller": True, "blockOwnerDeletion": True}
        labels = {JOB_UID_LABEL: uid} if uid and is_valid_label_value(uid) else {}
        body = {"metadata": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion"),
                             "ownerReferences": [*(meta.get("ownerReferences") or []), ref],
                             **({"labels": labels} if labels else {})}}
        return [Patch("Workload", meta["namespace"], meta["name"], body),
                Note("prebuilt workload adopted", {"object": job.describe(), "workload": meta["name"]})]
    try:
        built = job.build_workload()
    except ValueError:
        built = None
    if built is None or mismatch(job, built, workload) is None:
        return None
    return out_of_sync(job, workload) or None


def out_of_sync(job: GenericJob, workload: Mapping[str, Any]) -> list[Action]:
    """Upstream's ensurePrebuiltWorkloadInSync failing: the Workload is finished ``OutOfSync`` and, as
    the job then has no Workload (handleJobWithNoWorkload for a prebuilt one), a job still running is
    stopped; once both hold, nothing (the finished Workload's usual rule finalizes the job)."""
    meta = workload.get("metadata") or {}
    actions: list[Action] = []
    if not finished_workload(workload):
        actions.append(WorkloadConditions(meta["namespace"], meta["name"], (("Finished", True, *OUT_OF_SYNC),),
                                          meta.get("uid")))
    if not job.is_suspended() and not job.finished()[0]:
        actions += job.suspend()
    if actions:
        actions.append(Note("prebuilt workload out of sync with its job; finished", {
            "object": job.describe(), "workload": str(meta.get("name"))}))
    return actions
