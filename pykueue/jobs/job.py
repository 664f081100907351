"""The batch/v1 Job on the job framework: the GenericJob the controller reconciles for a managed Job.

The rules themselves (the Workload a Job becomes, what admission injects, what eviction restores) are
``pykueue.jobs.batch``'s, shared with the simulator; this adds the Job's live state (finished,
pods ready, reclaimable pods) and the writes that suspend, start and stop it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs import batch
from pykueue.jobs.framework import Action, Note, Patch, Replace, SuspendFlag

FRAMEWORK = "batch/job"
KIND = "Job"


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def is_finished(job: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete / Failed conditions."""
    for kind, ok in (("Complete", True), ("Failed", False)):
        cond = _condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            default = "Job finished successfully" if ok else "Job failed"
            return True, ok, cond.get("message") or default
    return False, False, ""


def pods_ready(job: Mapping[str, Any]) -> bool:
    """Upstream's ``PodsReady`` for a Job: as many pods ready or succeeded as its pod set counts,
    min(parallelism, completions) (a Job of parallelism 3 and 1 completion runs one pod)."""
    status = job.get("status") or {}
    return (status.get("ready") or 0) + (status.get("succeeded") or 0) >= batch.pods_count(job)


def reclaimable_pods(job: Mapping[str, Any]) -> dict[str, int]:
    """Upstream's `ReclaimablePods` for a Job: once fewer pods remain to succeed than run in
    parallel, the difference no longer needs quota."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else parallelism
    succeeded = status.get("succeeded") or 0
    if parallelism == 1 or succeeded == 0:
        return {}
    completions = spec.get("completions")
    remaining = (parallelism if completions is None else completions) - succeeded
    if remaining >= parallelism:
        return {}
    return {batch.DEFAULT_POD_SET_NAME: parallelism - remaining}


def workload_key(job: Mapping[str, Any]) -> str:
    meta = job["metadata"]
    return f"{meta['namespace']}/{batch.workload_name_for_job(meta['name'], meta.get('uid'))}"


class Job(SuspendFlag):
    """A managed batch/v1 Job."""

    kind = KIND

    def workload_name(self) -> str:
        return batch.workload_name_for_job(self.meta["name"], self.meta.get("uid"))

    def finished(self) -> tuple[bool, bool, str]:
        return is_finished(self.obj)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj)

    def is_active(self) -> bool:
        """As upstream's: the Job controller still counts active pods (terminating ones are not)."""
        return bool((self.obj.get("status") or {}).get("active"))

    def reclaimable_pods(self) -> dict[str, int]:
        return reclaimable_pods(self.obj)

    def build_workload(self) -> dict[str, Any] | None:
        return batch.workload_from_job(self.obj)

    def suspend(self) -> list[Action]:
        # no webhook suspended it: stop it before it takes capacity
        return [Patch(KIND, self.namespace, self.meta["name"], {"spec": {"suspend": True}}),
                Note("job suspended until its workload is admitted", {"job": self._key()})]

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        info = infos[0]
        started = batch.inject_admission(self.obj, [info], info.get("count"))
        return [Replace(KIND, self.namespace, self.meta["name"], obj=started),
                Note("job started", {"job": self._key(), "flavors": _flavors(workload)})]

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        """Upstream's order: suspend, clear the start time (the Job API allows changing scheduling
        directives only of a suspended Job that has not started), then restore the template."""
        if self.is_suspended():
            return []
        name = self.meta["name"]
        actions: list[Action] = [Patch(KIND, self.namespace, name, {"spec": {"suspend": True}})]
        if (self.obj.get("status") or {}).get("startTime"):
            actions.append(Patch(KIND, self.namespace, name, {"status": {"startTime": None}}, subresource="status"))
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        original = batch.pod_set_info_from_pod_set(pod_sets[0]) if pod_sets else batch.original_pod_set_info(self.obj)
        actions += [Replace(KIND, self.namespace, name, change=lambda fresh: batch.restore_job(fresh, original)),
                    Note("job suspended: its workload is not admitted", {"job": self._key()})]
        return actions

    def finalize(self) -> list[Action]:
        return []  # a Job carries no finalizer of Kueue's

    def cleanup(self) -> list[Action]:
        return []

    def _key(self) -> str:
        return f"{self.namespace}/{self.meta['name']}"


def _flavors(workload: Mapping[str, Any]) -> str:
    names: dict[str, None] = {}
    for assignment in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        names.update(dict.fromkeys((assignment.get("flavors") or {}).values()))
    return ",".join(names)
