"""The batch/v1 Job on the job framework: the GenericJob the controller reconciles for a managed Job.

The rules themselves (the Workload a Job becomes, what admission injects, what eviction restores) are
``workload.py``'s, shared with the simulator; this adds the Job's live state (finished,
pods ready, reclaimable pods) and the writes that suspend, start and stop it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs import slicing
from pykueue.jobs.framework import Action, Note, Patch, Replace, SuspendFlag
from pykueue.jobs.framework.podset import pod_set_info_from_pod_set
from pykueue.jobs.framework.workload import DEFAULT_POD_SET_NAME, workload_name_for_owner
from pykueue.jobs.job.workload import (
    inject_admission,
    original_pod_set_info,
    pods_count,
    restore_job,
    workload_from_job,
    workload_name_for_job,
)
from pykueue.kube import objects

FRAMEWORK = "batch/job"
KIND = "Job"
# Set with ``spec.suspend`` in the one write that stops a Job, dropped once its template is restored: a
# suspended Job that still carries it has not finished stopping, so the next reconcile completes the stop.
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"


def is_finished(job: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete / Failed conditions."""
    for kind, ok in (("Complete", True), ("Failed", False)):
        cond = objects.condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            default = "Job finished successfully" if ok else "Job failed"
            return True, ok, cond.get("message") or default
    return False, False, ""


def _succeeded(status: Mapping[str, Any]) -> int:
    """Succeeded pods, counting those the Job controller has seen terminate but not yet folded into
    ``status.succeeded`` (``status.uncountedTerminatedPods.succeeded``: pod UIDs, counted once there)."""
    uncounted = (status.get("uncountedTerminatedPods") or {}).get("succeeded") or []
    return (status.get("succeeded") or 0) + len(uncounted)


def pods_ready(job: Mapping[str, Any]) -> bool:
    """Upstream's ``PodsReady`` for a Job: as many pods ready or succeeded as its pod set counts,
    min(parallelism, completions) (a Job of parallelism 3 and 1 completion runs one pod). A pod that
    succeeded is counted from the moment the Job controller records its UID as uncounted."""
    status = job.get("status") or {}
    return (status.get("ready") or 0) + _succeeded(status) >= pods_count(job)


def _index_count(text: str | None) -> int:
    """How many indexes a Job's ``completedIndexes`` / ``failedIndexes`` text names ("1,3-5,7" is 5)."""
    total = 0
    for part in (text or "").split(","):
        if not part.strip():
            continue
        first, _, last = part.partition("-")
        try:
            total += int(last or first) - int(first) + 1
        except ValueError:
            continue  # the Job controller writes only numbers; anything else names no index
    return total


def reclaimable_pods(job: Mapping[str, Any]) -> dict[str, int]:
    """Upstream's ``ReclaimablePods`` for a Job: once fewer pods remain to run than run in parallel,
    the difference no longer needs quota.

    What remains: for an Indexed Job, the indexes neither completed nor failed (``completedIndexes``,
    and ``failedIndexes`` under backoffLimitPerIndex: a failed index is never retried); otherwise
    completions (parallelism when unset) less the pods that succeeded."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else parallelism
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and completions is not None:
        done = _index_count(status.get("completedIndexes")) + _index_count(status.get("failedIndexes"))
    else:
        done = _succeeded(status)
    if parallelism == 1 or done == 0:
        return {}
    remaining = (parallelism if completions is None else completions) - done
    if remaining >= parallelism:
        return {}
    return {DEFAULT_POD_SET_NAME: parallelism - max(remaining, 0)}


def workload_key(job: Mapping[str, Any]) -> str:
    meta = job["metadata"]
    return f"{meta['namespace']}/{workload_name_for_job(meta['name'], meta.get('uid'))}"


class Job(SuspendFlag):
    """A managed batch/v1 Job."""

    kind = KIND
    api_version = "batch/v1"
    sliced = True

    def gated_pods_selector(self) -> str | None:
        """Its pods, while it counts some active (upstream selects a Job's by its controller UID)."""
        uid, active = self.meta.get("uid"), (self.obj.get("status") or {}).get("active")
        return f"batch.kubernetes.io/controller-uid={uid}" if uid and active else None

    def slice_pod_set(self, pod: Mapping[str, Any], names: list[str]) -> str | None:
        return names[0] if len(names) == 1 else None  # a Job's one pod set

    def workload_name(self) -> str:
        if slicing.enabled(self.obj):
            # a slice per generation; the controller finds an elastic Job's slices by owner (``slicing``)
            return workload_name_for_owner(KIND, "batch", self.meta["name"], self.meta.get("uid") or None,
                                                 self.meta.get("generation") or 1)
        return workload_name_for_job(self.meta["name"], self.meta.get("uid"))

    def finished(self) -> tuple[bool, bool, str]:
        return is_finished(self.obj)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj)

    def is_active(self) -> bool:
        """The Job controller still counts active or terminating pods. Upstream's ``IsActive`` counts
        only ``status.active``, so a preempted Job's pods in a long grace period run beside the
        preemptor; here their quota is held until they are gone (``status.terminating``, kept by the
        Job controller with JobPodReplacementPolicy, on by default since Kubernetes 1.29)."""
        status = self.obj.get("status") or {}
        return bool(status.get("active") or status.get("terminating"))

    def reclaimable_pods(self) -> dict[str, int]:
        return reclaimable_pods(self.obj)

    def build_workload(self) -> dict[str, Any] | None:
        return workload_from_job(self.obj)

    def suspend(self) -> list[Action]:
        # no webhook suspended it: stop it before it takes capacity
        return [Patch(KIND, self.namespace, self.meta["name"], {"spec": {"suspend": True}}),
                Note("job suspended until its workload is admitted", {"job": self._key()})]

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        info = infos[0]
        started = inject_admission(self.obj, [info], info.get("count"))
        return [Replace(KIND, self.namespace, self.meta["name"], obj=started),
                Note("job started", {"job": self._key(), "flavors": _flavors(workload)})]

    def is_suspended(self) -> bool:
        """Upstream's: suspended, and not part-way through a stop (the stopping annotation still on)."""
        return super().is_suspended() and _annotations(self.obj).get(STOPPING_ANNOTATION) != "true"

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        """Upstream's ``Job.Stop``, called whenever the Workload does not let the Job run, suspended or not.

        A running Job is suspended in one write that also sets the stopping annotation, so a stop cut
        short (a crash, a refused write) is seen unfinished and completed by the next reconcile. Then
        the start time is cleared (the Job API lets only a suspended Job that has not started change
        its scheduling directives) and the template is restored from the Workload's pod set, dropping
        the annotation. A Job already suspended gets the last two steps whenever its template still
        differs from what the Workload recorded, so none of a past admission's node selector stays."""
        name = self.meta["name"]
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        original = pod_set_info_from_pod_set(pod_sets[0]) if pod_sets else original_pod_set_info(self.obj)
        actions: list[Action] = []
        if not self.is_suspended():
            actions.append(Patch(KIND, self.namespace, name, {
                "metadata": {"annotations": {STOPPING_ANNOTATION: "true"}}, "spec": {"suspend": True}}))
        if (self.obj.get("status") or {}).get("startTime"):
            actions.append(Patch(KIND, self.namespace, name, {"status": {"startTime": None}}, subresource="status"))
        if actions or _restored(self.obj, original) != self.obj:
            actions += [Replace(KIND, self.namespace, name, change=lambda fresh: _restored(fresh, original)),
                        Note("job suspended: its workload is not admitted", {"job": self._key()})]
        return actions

    def finalize(self) -> list[Action]:
        return []  # a Job carries no finalizer of Kueue's

    def cleanup(self) -> list[Action]:
        return []

    def _key(self) -> str:
        return f"{self.namespace}/{self.meta['name']}"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _restored(job: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """The Job suspended, its template as the Workload recorded it, the stopping annotation gone."""
    new = restore_job(job, original)
    annotations = new["metadata"].get("annotations")
    if annotations is not None:
        annotations.pop(STOPPING_ANNOTATION, None)
        if not annotations:
            del new["metadata"]["annotations"]
    return new


def _flavors(workload: Mapping[str, Any]) -> str:
    names: dict[str, None] = {}
    for assignment in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        names.update(dict.fromkeys((assignment.get("flavors") or {}).values()))
    return ",".join(names)
