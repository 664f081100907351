"""JobSet on the job framework: the GenericJob the controller reconciles for it.

The Workload it becomes is ``pykueue.jobs.jobset.workload``'s (shared with the simulator); this adds the live
state upstream's integration reads and the writes that suspend, start and stop it:

- suspended: ``spec.suspend``; JobSet's controller creates the child Jobs suspended and resumes them
  (copying each replicated job's template into them) when the JobSet is resumed;
- start (``RunWithPodSetsInfo``): suspend false, each pod set's admission info (the flavors' node
  labels and tolerations, the queue labels) merged into its replicated job's pod template;
- stop (``RestorePodSetsInfo``): suspend true and each template as the Workload recorded it;
- finished: the ``Completed`` or ``Failed`` condition is true (succeeded for ``Completed``);
- active: some replicated job reports active Jobs, or a child Job still counts active or terminating
  pods (its pods in their grace period after a stop: JobSet's status does not count them, and their
  quota is held until they are gone, as for a batch/v1 Job);
- pods ready: every replica's Job is ready or succeeded (the replicated jobs' statuses);
- reclaimable pods: per replicated job, its succeeded Jobs times the pods each ran.

The child Jobs are the JobSet's (their controller owner is it): ``pykueue.jobs.managed`` never queues
them by themselves while this integration is on.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs import managed
from pykueue.jobs.framework import TemplatesBySuspend
from pykueue.jobs.framework import workload as framework_workload
from pykueue.jobs.framework.podset import PodSetInfoError, merge_template
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.jobset import workload as jobset


def is_managed(obj: Mapping[str, Any], manage_without_queue_name: bool) -> bool:
    """Kueue queues it: it names a LocalQueue, or every object is queued."""
    return framework_workload.is_managed(obj) or manage_without_queue_name


def with_pod_sets_info(obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *, restore: bool) -> dict[str, Any]:
    """``RunWithPodSetsInfo`` (``restore=False``) or ``RestorePodSetsInfo`` plus ``Suspend``
    (``restore=True``), as a new object; one info per replicated job, else ``PodSetInfoError``."""
    new = copy.deepcopy(dict(obj))
    jobs = new["spec"].get("replicatedJobs") or []
    if len(infos) != len(jobs):
        raise PodSetInfoError(f"invalid podset infos: expecting {len(jobs)} podsets, got {len(infos)}")
    new["spec"]["suspend"] = restore
    for replicated, info in zip(jobs, infos, strict=True):
        spec = replicated.setdefault("template", {}).setdefault("spec", {})
        spec["template"] = merge_template(copy.deepcopy(spec.get("template") or {}), info, restore)
    return new


def _jobset_owner(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    owner = managed.controller_owner(job)
    if owner is None or owner.get("kind") != jobset.KIND \
            or not str(owner.get("apiVersion") or "").startswith(f"{jobset.GROUP}/"):
        return None
    return owner


def owning_jobset(job: Mapping[str, Any]) -> str | None:
    """The name of the JobSet that controls ``job`` (its controller owner reference), if one does."""
    owner = _jobset_owner(job)
    return None if owner is None else str(owner.get("name"))


def controls(obj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """``job`` is this JobSet object's (its controller reference names this UID, not a predecessor's)."""
    owner, uid = _jobset_owner(job), (obj.get("metadata") or {}).get("uid")
    return owner is not None and (not uid or owner.get("uid") == uid)


class JobSetObject(TemplatesBySuspend):
    """A managed JobSet; ``children``: the cached Jobs it controls."""

    kind = jobset.KIND
    api_version = jobset.API_VERSION

    def __init__(self, obj: dict[str, Any], children: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(obj)
        self.children = children

    def workload_name(self) -> str:
        return workload_name_for_owner(jobset.KIND, jobset.GROUP, self.meta["name"], self.meta.get("uid") or None)

    def _statuses(self) -> list[Mapping[str, Any]]:
        return list((self.obj.get("status") or {}).get("replicatedJobsStatus") or [])

    def finished(self) -> tuple[bool, bool, str]:
        for cond in (self.obj.get("status") or {}).get("conditions") or []:
            if cond.get("status") == "True" and cond.get("type") in ("Completed", "Failed"):
                return True, cond["type"] == "Completed", cond.get("message") or ""
        return False, False, ""

    def is_active(self) -> bool:
        if any((s.get("active") or 0) > 0 for s in self._statuses()):
            return True
        return any((j.get("status") or {}).get("active") or (j.get("status") or {}).get("terminating")
                   for j in self.children)

    def pods_ready(self) -> bool:
        wanted = sum(jobset.replicas(j) for j in jobset.replicated_jobs(self.obj))
        ready = sum((s.get("ready") or 0) + (s.get("succeeded") or 0) for s in self._statuses())
        return wanted == ready

    def reclaimable_pods(self) -> dict[str, int]:
        statuses = {s.get("name"): s for s in self._statuses()}
        out = {}
        for replicated in jobset.replicated_jobs(self.obj):
            succeeded = (statuses.get(replicated.get("name")) or {}).get("succeeded") or 0
            if 0 < succeeded <= jobset.replicas(replicated):
                out[replicated["name"]] = succeeded * jobset.pods_per_replica(replicated)
        return out

    def build_workload(self) -> dict[str, Any] | None:
        return jobset.workload_from_jobset(self.obj)

    def with_pod_sets_info(self, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                           restore: bool) -> dict[str, Any]:
        return with_pod_sets_info(obj, infos, restore=restore)


def wrap(obj: dict[str, Any], jobs: Sequence[Mapping[str, Any]]) -> JobSetObject:
    """The GenericJob of a managed JobSet, with the cached Jobs it controls (not a predecessor's)."""
    return JobSetObject(obj, [j for j in jobs if controls(obj, j)])
