"""The batch/v1 Job side: a Workload per managed Job, and the Job following its Workload.

Like upstream's jobframework reconciler this reads only API objects (the Job and its Workload from
the informers' caches), never the engine: the Workload's status is the contract between the two
halves. The rules themselves (the Workload a Job becomes, what admission injects, what eviction
restores) are the pure functions of `pykueue.jobs.batch`, shared with the simulator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pykueue.api.models.kueue_v1beta2 import PriorityClassRef
from pykueue.api.priority import PriorityClasses, Resolved, resolve
from pykueue.controller.translate import condition, is_true
from pykueue.controller.workload_status import rfc3339
from pykueue.jobs import batch
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube

log = logging.getLogger("pykueue.jobs")
MANAGER = "kueue-job-controller"
RECLAIMABLE_PODS_MANAGER = "kueue-reclaimable-pods"


def is_finished(job: dict[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete / Failed conditions."""
    for kind, ok in (("Complete", True), ("Failed", False)):
        cond = condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            default = "Job finished successfully" if ok else "Job failed"
            return True, ok, cond.get("message") or default
    return False, False, ""


def pods_ready(job: dict[str, Any]) -> bool:
    """All the pods the Job runs are ready, or have succeeded (upstream's `PodsReady` for Job)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    wanted = spec.get("parallelism", 1)
    if wanted == 0:
        return False
    return (status.get("ready") or 0) + (status.get("succeeded") or 0) >= wanted


def reclaimable_pods(job: dict[str, Any]) -> dict[str, int]:
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


class JobSync:
    """Reconciles one Job key: create its Workload, suspend or start the Job, finish the Workload."""

    def __init__(self, kube: Kube, jobs: dict[str, dict[str, Any]], workloads: dict[str, dict[str, Any]],
                 flavors: dict[str, dict[str, Any]], classes: Callable[[], PriorityClasses],
                 manage_without_queue_name: bool, now: Callable[[], float]) -> None:
        self.kube = kube
        self.jobs = jobs
        self.workloads = workloads
        self.flavors = flavors
        self.classes = classes
        self.manage_without_queue_name = manage_without_queue_name
        self.now = now

    def managed(self, job: dict[str, Any]) -> bool:
        return batch.is_managed(job) or self.manage_without_queue_name

    def workload_key(self, job: dict[str, Any]) -> str:
        meta = job["metadata"]
        return f"{meta['namespace']}/{batch.workload_name_for_job(meta['name'], meta.get('uid'))}"

    async def reconcile(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or not self.managed(job) or job["metadata"].get("deletionTimestamp"):
            return
        workload = self.workloads.get(self.workload_key(job))
        finished, succeeded, message = is_finished(job)
        if workload is None:
            if finished:
                return
            if not (job.get("spec") or {}).get("suspend"):
                await self._suspend(job)  # no webhook suspended it: stop it before it takes capacity
            await self._create_workload(job)
            return
        if finished:
            if not is_true(workload, "Finished"):
                await self._set_conditions(workload, [self._cond(
                    "Finished", True, "Succeeded" if succeeded else "Failed", message)])
            return
        reclaimable = reclaimable_pods(job)
        recorded = {p.get("name"): p.get("count") for p in (workload.get("status") or {}).get("reclaimablePods") or []}
        if reclaimable != recorded:
            await self._set_reclaimable_pods(workload, reclaimable)
        admitted = is_true(workload, "Admitted") and (workload.get("status") or {}).get("admission")
        suspended = bool((job.get("spec") or {}).get("suspend"))
        if admitted and suspended:
            await self._start(job, workload)
        elif not admitted and not suspended:
            await self._stop(job, workload)
        elif admitted:
            ready = pods_ready(job)
            if ready != is_true(workload, "PodsReady"):
                reason, text = (("PodsReady", "All pods reached readiness and the workload is running")
                                if ready else ("WaitForRecovery", "At least one pod has failed, waiting for recovery"))
                await self._set_conditions(workload, [self._cond("PodsReady", ready, reason, text)])

    # ---- writes ---------------------------------------------------------------------------------

    def _cond(self, kind: str, status: bool, reason: str, message: str) -> dict[str, Any]:
        return {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message,
                "lastTransitionTime": rfc3339(self.now())}

    async def _set_conditions(self, workload: dict[str, Any], conditions: list[dict[str, Any]]) -> None:
        meta = workload["metadata"]
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                "status": {"conditions": conditions}}
        await self.kube.apply(r.WORKLOAD, body, manager=MANAGER, subresource="status")

    async def _set_reclaimable_pods(self, workload: dict[str, Any], pods: dict[str, int]) -> None:
        """`status.reclaimablePods` under upstream's own field manager, so the admission side's
        status writes neither own nor drop it."""
        meta = workload["metadata"]
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                "status": {"reclaimablePods": [{"name": n, "count": c} for n, c in sorted(pods.items())]}}
        await self.kube.apply(r.WORKLOAD, body, manager=RECLAIMABLE_PODS_MANAGER, subresource="status")
        log.info("reclaimable pods", extra={"fields": {
            "workload": f"{meta['namespace']}/{meta['name']}", "reclaimablePods": ",".join(
                f"{n}={c}" for n, c in sorted(pods.items())) or "none"}})

    async def _suspend(self, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        await self.kube.merge_patch(r.JOB, meta["name"], {"spec": {"suspend": True}}, meta["namespace"])
        log.info("job suspended until its workload is admitted", extra={"fields": {
            "job": f"{meta['namespace']}/{meta['name']}"}})

    async def _create_workload(self, job: dict[str, Any]) -> None:
        try:
            manifest = batch.workload_from_job(job)
        except (batch.JobConversionError, ValueError) as exc:
            log.warning("job cannot be queued", extra={"fields": {
                "job": f"{job['metadata']['namespace']}/{job['metadata']['name']}", "error": str(exc)}})
            return
        spec = manifest["spec"]
        ref = spec.get("priorityClassRef")
        resolved = resolve(None, PriorityClassRef.model_validate(ref) if ref else None, self.classes(),
                           from_job=True)
        if isinstance(resolved, Resolved):
            spec["priority"] = resolved.priority
            if resolved.class_name and not ref:
                spec["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                            "name": resolved.class_name}
        manifest["metadata"].pop("creationTimestamp", None)
        try:
            await self.kube.create(r.WORKLOAD, manifest, manifest["metadata"]["namespace"])
        except ApiError as exc:
            if exc.status != 409:  # already there: the informer will bring it
                raise
        log.info("workload created", extra={"fields": {
            "workload": f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}",
            "job": job["metadata"]["name"]}})

    async def _start(self, job: dict[str, Any], workload: dict[str, Any]) -> None:
        admission = workload["status"]["admission"]
        assignment = admission["podSetAssignments"][0]
        names = list(dict.fromkeys(assignment.get("flavors", {}).values()))
        flavors = [self.flavors[n] for n in names if n in self.flavors]
        info = batch.pod_set_info_from_flavors(flavors, name=assignment.get("name", "main"),
                                               count=assignment.get("count"))
        started = batch.inject_admission(job, [info], assignment.get("count"))
        await self.kube.replace(r.JOB, started)
        log.info("job started", extra={"fields": {
            "job": f"{job['metadata']['namespace']}/{job['metadata']['name']}", "flavors": ",".join(names)}})

    async def _stop(self, job: dict[str, Any], workload: dict[str, Any]) -> None:
        """Upstream's order: suspend, clear the start time (the Job API allows changing scheduling
        directives only of a suspended Job that has not started), then restore the template."""
        meta = job["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        await self.kube.merge_patch(r.JOB, name, {"spec": {"suspend": True}}, namespace)
        if (job.get("status") or {}).get("startTime"):
            await self.kube.merge_patch(r.JOB, name, {"status": {"startTime": None}}, namespace,
                                        subresource="status")
        fresh = await self.kube.get(r.JOB, name, namespace)
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        original = batch.pod_set_info_from_pod_set(pod_sets[0]) if pod_sets else batch.original_pod_set_info(job)
        await self.kube.replace(r.JOB, batch.restore_job(fresh, original))
        log.info("job suspended: its workload is not admitted", extra={"fields": {
            "job": f"{job['metadata']['namespace']}/{job['metadata']['name']}"}})
