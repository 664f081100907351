"""MultiKueue's workload side on the manager, after upstream's wlReconciler (workload.go) and its
batch/v1 Job adapter (batchjob_adapter.go): a Workload holding quota in a ClusterQueue with a
MultiKueue check is copied, as a prebuilt Workload carrying this manager's origin label, to the
workers nominated for it; the first worker to admit its copy wins (the other copies are deleted), the
Job is created there with ``kueue.x-k8s.io/prebuilt-workload-name``, the check turns Ready with
``status.clusterName`` set, and the manager's Job (``spec.managedBy: kueue.x-k8s.io/multikueue``, so
no Job controller runs it here) mirrors the remote Job's status until it finishes; then the job side
finishes the Workload and the remote objects are deleted. A worker lost while it runs the workload
is waited for ``workerLostTimeout``, then the check is set to Retry and the workload requeued; if it
comes back with its copy still admitted after the workload was admitted elsewhere, that older copy wins
and its job runs on, but ``status.clusterName`` (immutable once set) keeps naming the other worker and
the reconcile fails (``ClusterNameTaken``) until the job ends, as upstream's.
Orphans (remote objects of this origin whose Workload is gone) are deleted every ``gcInterval``.

The decisions (nomination, the winner, the lost-worker wait) are ``pykueue.engine.multikueue``'s.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pykueue.controller.core.events import Recorder
from pykueue.controller.core.workload_status import rfc3339
from pykueue.controller.multikueue import adapters
from pykueue.controller.multikueue.clusters import Workers
from pykueue.engine import model
from pykueue.engine import multikueue as mk
from pykueue.kube import objects
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer, key_of
from pykueue.kube.workqueue import WorkQueue

log = logging.getLogger("pykueue.controller.multikueue")

RESYNC_SECONDS = 2.0  # every tracked workload looked at again (the local Job's status moves without an event here)
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def clone_workload(local: dict[str, Any], origin: str) -> dict[str, Any]:
    """The copy a worker gets: name, namespace, labels (but the job's uid) with the origin label,
    annotations, and the spec; no owner, no status (upstream's cloneForCreate)."""
    meta = local["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != JOB_UID_LABEL}
    labels[mk.ORIGIN_LABEL] = origin
    out_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"], "labels": labels}
    if meta.get("annotations"):
        out_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": r.WORKLOAD.api_version, "kind": "Workload", "metadata": out_meta,
            "spec": copy.deepcopy(local["spec"])}


class ClusterNameTaken(Exception):
    """The reserving copy is on another worker than the one ``status.clusterName`` already names (a
    worker back from an outage with an older admission): the field cannot change, so the reconcile
    fails and is retried, as upstream's does."""


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns ``old`` into ``new``: what ``new`` lacks is set to null, at
    every depth (a Job's ``uncountedTerminatedPods`` would otherwise keep the uids it no longer has)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return copy.deepcopy(new)
    out: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        if key not in old or old[key] != value:
            out[key] = merge_patch(old.get(key), value)
    return out


class MultiKueueWorkloads:
    """The manager's MultiKueue workload reconciler (one work queue keyed by Workload)."""

    def __init__(self, kube: Kube, informers: dict[str, Informer], workers: Workers, config: model.MultiKueue,
                 recorder: Recorder, clock: Callable[[], float] = time.time) -> None:
        self.kube = kube
        self.informers = informers
        self.workers = workers
        self.config = config
        self.recorder = recorder
        self.clock = clock
        self.work = WorkQueue()
        self.tracked: set[str] = set()  # local Workloads with a MultiKueue check
        self.round_started: dict[str, float] = {}  # the incremental dispatcher's rounds, by Workload

    # ---- triggers ----------------------------------------------------------------------------------

    def on_workload(self, obj: dict[str, Any]) -> None:
        key = key_of(obj)
        if key in self.tracked or self.check_name(obj) is not None:
            self.tracked.add(key)
            self.work.add(key)

    async def track_cached(self) -> None:
        """Every cached Workload looked at once the Workload and AdmissionCheck caches have both listed (as
        controller-runtime starts a reconciler only after its caches sync): a Workload seen before its
        check was cached is not taken for one without a MultiKueue check, and then never tracked, its copies
        left on the workers after it finished (seen after a manager restart under load)."""
        await asyncio.gather(*(self.informers[plural].synced.wait() for plural in ("workloads", "admissionchecks")))
        for obj in list(self.informers["workloads"].store.values()):
            self.on_workload(obj)

    def on_remote(self, worker: str, plural: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        adapter = next((a for a in adapters.ADAPTERS if a.resource.plural == plural), None)
        names = [meta["name"]] if plural == "workloads" else adapter.workloads_of(obj) if adapter else []
        for name in names:
            self.work.add(f"{meta['namespace']}/{name}")

    def on_worker(self, worker: str) -> None:
        for key in self.tracked:
            self.work.add(key)

    async def resync(self) -> None:
        while True:
            await asyncio.sleep(RESYNC_SECONDS)
            for key in list(self.tracked):
                self.work.add(key)

    async def gc(self) -> None:
        """Every gcInterval: remote objects of this origin whose manager Workload is gone (upstream's runGC)."""
        if self.config.gc_interval_seconds <= 0:
            await asyncio.Event().wait()  # turned off: never collects (and never returns, so never restarts)
        while True:
            await asyncio.sleep(self.config.gc_interval_seconds)
            await self.collect_orphans()

    async def collect_orphans(self) -> None:
        local = self.informers["workloads"].store
        for name in list(self.workers.workers):
            worker = self.workers.usable(name)
            if worker is None or "workloads" not in worker.informers:
                continue
            for res in (*adapters.watched(worker.informers), r.WORKLOAD):
                adapter = next((a for a in adapters.ADAPTERS if a.resource is res), None)
                for key, obj in list(worker.informers[res.plural].store.items()):
                    meta = obj["metadata"]
                    names = [meta["name"]] if adapter is None else adapter.workloads_of(obj)
                    mine = [local.get(f"{meta['namespace']}/{wl}") for wl in names]
                    if not any(m is not None and not m["metadata"].get("deletionTimestamp") for m in mine):
                        log.info("multikueue orphan deleted", extra={"fields": {"cluster": name, "kind": res.kind,
                                                                                "key": key}})
                        await self._delete(worker.kube, res, meta["namespace"], meta["name"])

    def failed(self, key: str, exc: Exception) -> None:
        log.warning("multikueue workload not reconciled; retrying", extra={"fields": {"workload": key,
                                                                                       "error": str(exc)}})

    # ---- the reconciler ------------------------------------------------------------------------------

    def check_name(self, wl: dict[str, Any]) -> str | None:
        """The MultiKueue check among the Workload's checks (at most one applies, as upstream assumes)."""
        checks = self.informers["admissionchecks"].store
        for state in (wl.get("status") or {}).get("admissionChecks") or []:
            check = checks.get(state.get("name", ""))
            if check is not None and (check.get("spec") or {}).get("controllerName") == mk.CONTROLLER_NAME:
                return str(state["name"])
        return None

    def clusters_of(self, check: str) -> list[str]:
        obj = self.informers["admissionchecks"].store.get(check) or {}
        params = (obj.get("spec") or {}).get("parameters")
        if mk.bad_parameters(params) is not None:
            return []
        config = self.informers["multikueueconfigs"].store.get(params["name"]) or {}
        return list((config.get("spec") or {}).get("clusters") or [])

    async def reconcile(self, key: str) -> None:
        local = self.informers["workloads"].get(key)
        namespace, name = key.split("/", 1)
        if local is None or local["metadata"].get("deletionTimestamp"):
            for worker in list(self.workers.workers):
                await self.remove_remote(worker, namespace, name)
            self.tracked.discard(key)
            self.round_started.pop(key, None)
            return
        check = self.check_name(local)
        if check is None:
            return
        owner = adapters.owner_of(local)
        state = next(s for s in local["status"]["admissionChecks"] if s.get("name") == check)
        adapter = adapters.for_owner(owner)
        if owner is None or adapter is None or adapter.resource.plural not in self.informers:
            why = mk.NO_ADAPTER if owner is None else f'{mk.NO_ADAPTER} for owner kind "{_gvk(owner)}"'
            await self.set_check(local, check, state, model.CheckState.REJECTED, why)
            return
        jobs = adapter.local_objects(local, self.informers[adapter.resource.plural].store)
        if jobs is None:
            return  # not in the cache yet: its event or the resync comes back
        unmanaged = next((why for why in map(adapter.unmanaged, jobs) if why is not None), None)
        if unmanaged is not None:
            await self.set_check(local, check, state, model.CheckState.REJECTED,
                                 mk.UNMANAGED + unmanaged)
            return
        clusters = self.clusters_of(check)
        available = [c for c in clusters if self.workers.usable(c) is not None]
        remotes = {c: self._remote(c, "workloads", key) for c in available}
        for c, remote in remotes.items():
            if remote is not None:
                await self._sync_priority(c, local, remote)

        # the Workload finished or without quota: nothing of it may run on a worker
        if objects.is_true(local, "Finished") or not objects.is_true(local, "QuotaReserved"):
            for c in available:
                await self.remove_remote(c, namespace, name)
            self.round_started.pop(key, None)
            status = local.get("status") or {}
            if not objects.is_true(local, "Finished") and (status.get("clusterName") or status.get("nominatedClusterNames")):
                await self._patch_status(local, {"clusterName": None, "nominatedClusterNames": None})
            return

        # evicted here while holding quota (its worker lost, preempted, a check Retry): the copies are given
        # up and the manager's Job no longer shows them running, so the job side can release the quota.
        # Admitted while the check is no longer Ready is the same moment, seen before Evicted is written.
        evicting = objects.is_true(local, "Admitted") and state.get("state") != model.CheckState.READY
        if objects.is_true(local, "Evicted") or evicting:
            for c in available:
                await self.remove_remote(c, namespace, name)
            for job in jobs:
                await self._job_status(adapter, job, adapter.given_up(job))
            return

        # a remote copy finished: its Job's final status comes over; the job side finishes the Workload
        finished = mk.first_admitted({c: (objects.condition(w, "Finished") or {}).get("lastTransitionTime")
                                      for c, w in remotes.items() if w is not None and objects.is_true(w, "Finished")})
        if finished is not None:
            await self.sync_jobs(adapter, finished, jobs, name)
            return

        # a remote copy evicted while the check is Ready: the workload goes back to the manager's queue
        evicted = [c for c, w in remotes.items() if w is not None and objects.is_true(w, "Evicted")]
        if evicted and state.get("state") == model.CheckState.READY:
            cluster = (local.get("status") or {}).get("clusterName") or evicted[0]
            await self.set_check(local, check, state, model.CheckState.RETRY, (
                f'Workload evicted on worker cluster: "{cluster}", resetting for re-admission. '
                f'Previously: "{state.get("state")}"'))
            return

        winner = mk.first_admitted({c: (objects.condition(w, "Admitted") or {}).get("lastTransitionTime")
                                    for c, w in remotes.items() if w is not None and objects.is_true(w, "Admitted")})
        if winner is None and state.get("state") == model.CheckState.READY:
            reserving = (local.get("status") or {}).get("clusterName") or ""
            if not reserving or (reserving in clusters and reserving not in available):
                # unreachable: wait workerLostTimeout from the instant kept on the Workload (a restart keeps it)
                lost = mk.lost_worker(_lost_since(local), self.clock(), self.config.worker_lost_timeout_seconds)
                if lost.record is not None:
                    await self._annotate_lost(local, rfc3339(lost.record))
                if lost.wait > 0:
                    self.work.add_after(key, lost.wait)
                    return
                await self.set_check(local, check, state, model.CheckState.RETRY, "Reserving remote lost")
                return
            if reserving not in clusters:
                # no longer in the MultiKueueConfig: given up at once, as upstream does; its objects go too
                # when that worker still answers (upstream leaves them running beside the next copy)
                await self.remove_remote(reserving, namespace, name)
            await self.set_check(local, check, state, model.CheckState.RETRY,
                                 "Reserving remote no longer exists or is not admitted")
            return
        if winner is not None:
            for c, w in remotes.items():
                if w is not None and c != winner:
                    await self.remove_remote(c, namespace, name)
            await self.sync_jobs(adapter, winner, jobs, name)
            record = mk.reserving(state.get("state"), (local.get("status") or {}).get("clusterName"), winner)
            if record.refused is not None:
                raise ClusterNameTaken(record.refused)  # the job runs on there; retried, as upstream's error
            if record.write:
                message = f'The workload got reservation on "{winner}"'
                await self.set_check(local, check, state, model.CheckState.READY, message,
                                     extra={"clusterName": winner, "nominatedClusterNames": None})
                self.recorder.emit(local, "MultiKueue", message)
                for sibling in self.components(local, adapter) or []:
                    self.work.add(key_of(sibling))  # the other groups follow it to this worker
            if mk.WORKER_LOST_SINCE_ANNOTATION in (local["metadata"].get("annotations") or {}):
                await self._annotate_lost(local, None)  # the reservation is seen again: a later loss waits afresh
            return

        # nominate the workers, then make the copies agree with the nomination
        if state.get("state") != model.CheckState.PENDING or objects.is_true(local, "Evicted"):
            return
        members = self.components(local, adapter)
        step = adapters.Component()
        if members is not None and adapter.expected_workloads is not None:
            step = adapters.component_step(local, members, adapter.expected_workloads(jobs[0]))
        if step.wait:
            return  # a sibling's reconcile (or the resync) comes back
        if step.cluster is not None:
            if step.cluster not in available:
                return  # its worker is not usable now: the resync comes back
            reserving = (local.get("status") or {}).get("clusterName")
            if reserving and reserving != step.cluster:
                # already reserving on another worker: clusterName is immutable and excludes nominations
                # (the CRD refuses both at once), so a nomination patch would fail, retried at once, forever
                return
            if not reserving and step.cluster not in ((local.get("status") or {}).get("nominatedClusterNames") or []):
                await self._patch_status(local, {"nominatedClusterNames": [step.cluster]})
        nominated = [step.cluster] if step.cluster is not None else await self.nominate(local, key, clusters,
                                                                                        available)
        if nominated is None:
            return
        for c in available:
            if c in nominated and remotes[c] is None:
                worker = self.workers.usable(c)
                assert worker is not None and worker.kube is not None
                try:
                    await worker.kube.create(r.WORKLOAD, clone_workload(local, self.workers.origin), namespace)
                    log.info("multikueue workload dispatched", extra={"fields": {"workload": key, "cluster": c}})
                except ApiError as exc:
                    if exc.status != 409:
                        raise
            elif c not in nominated and remotes[c] is not None:
                await self.remove_remote(c, namespace, name)

    async def _sync_priority(self, cluster: str, local: dict[str, Any], remote: dict[str, Any]) -> None:
        """A copy whose priority is no longer the manager's Workload's (its job's priority-class label
        changed) gets it, as upstream updates an out-of-sync remote: the worker's queue then orders and
        preempts by it (a lowered one may be preempted there, a raised one preempt). Before: a copy was
        never written after its creation."""
        wanted = {f: (local.get("spec") or {}).get(f) for f in ("priority", "priorityClassRef")}
        have = {f: (remote.get("spec") or {}).get(f) for f in ("priority", "priorityClassRef")}
        if wanted == have or wanted["priority"] is None:
            return
        worker = self.workers.usable(cluster)
        if worker is None or worker.kube is None:
            return
        meta = local["metadata"]
        try:
            await worker.kube.merge_patch(r.WORKLOAD, meta["name"], {"spec": wanted}, meta["namespace"])
        except ApiError as exc:
            if exc.status >= 500 or exc.status in (408, 429):
                raise  # transient: the reconcile is retried
            # refused for its content (a PriorityClass reference the worker keeps while the copy holds
            # quota, a copy gone meanwhile): the copy keeps its priority; the flow goes on
            log.info("multikueue workload priority not synced", extra={"fields": {
                "workload": f"{meta['namespace']}/{meta['name']}", "cluster": cluster, "error": str(exc)[:300]}})
            return
        log.info("multikueue workload priority synced", extra={"fields": {
            "workload": f"{meta['namespace']}/{meta['name']}", "cluster": cluster, "priority": str(wanted["priority"])}})

    def components(self, local: dict[str, Any], adapter: adapters.Adapter) -> list[dict[str, Any]] | None:
        """The manager's Workloads of the same owner as ``local`` (itself included), by the owner's UID
        (upstream's listComponentWorkloads); None for a kind with one Workload per object."""
        if adapter.expected_workloads is None:
            return None
        meta = local["metadata"]
        uid = next((o.get("uid") for o in meta.get("ownerReferences") or [] if adapter.owns(o)), None)
        if not uid:
            return None
        return [w for w in self.informers["workloads"].store.values()
                if w["metadata"].get("namespace") == meta["namespace"]
                and any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])]

    async def nominate(self, local: dict[str, Any], key: str, clusters: list[str], available: list[str]
                       ) -> list[str] | None:
        """The clusters this workload is offered to now, written to ``status.nominatedClusterNames`` by the
        built-in dispatchers; an external dispatcher's are read from there."""
        status = local.get("status") or {}
        current = list(status.get("nominatedClusterNames") or [])
        dispatcher = self.config.dispatcher_name
        if dispatcher == model.MULTIKUEUE_ALL_AT_ONCE:
            wanted = mk.all_at_once(available)
            if sorted(current) != wanted or status.get("clusterName"):
                # a clusterName left from an earlier admission goes (the two are mutually exclusive)
                await self._patch_status(local, {"nominatedClusterNames": wanted or None, "clusterName": None})
            return wanted
        if dispatcher == model.MULTIKUEUE_INCREMENTAL and not status.get("clusterName"):
            now = self.clock()
            new, wait = mk.incremental_round(current, clusters, self.round_started.get(key), now)
            if new is not None:
                await self._patch_status(local, {"nominatedClusterNames": new, "clusterName": None})
                self.round_started[key] = now
                current = new
            if wait is not None:
                self.work.add_after(key, wait)
        return current

    # ---- writes ----------------------------------------------------------------------------------------

    async def set_check(self, local: dict[str, Any], check: str, state: dict[str, Any], value: str, message: str,
                        extra: dict[str, Any] | None = None) -> None:
        if state.get("state") == value and state.get("message") == message and not extra:
            return
        checks = copy.deepcopy((local.get("status") or {}).get("admissionChecks") or [])
        for entry in checks:
            if entry.get("name") == check:
                if entry.get("state") != value:
                    entry["lastTransitionTime"] = rfc3339(self.clock())
                entry["state"], entry["message"] = value, message
        await self._patch_status(local, {"admissionChecks": checks, **(extra or {})})
        log.info("multikueue check", extra={"fields": {"workload": key_of(local), "check": check, "state": value,
                                                       "message": message}})

    async def _annotate_lost(self, local: dict[str, Any], value: str | None) -> None:
        """The worker-lost instant written to (None: removed from) the Workload's annotations."""
        meta = local["metadata"]
        patch = {"metadata": {"annotations": {mk.WORKER_LOST_SINCE_ANNOTATION: value}}}
        await self.kube.merge_patch(r.WORKLOAD, meta["name"], patch, meta["namespace"])

    async def _patch_status(self, local: dict[str, Any], status: dict[str, Any]) -> None:
        """A merge patch of the Workload's status, on the version the decision was made from (a 409 comes
        back through the work queue's retry)."""
        meta = local["metadata"]
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "uid": meta.get("uid")},
                 "status": status}
        await self.kube.merge_patch(r.WORKLOAD, meta["name"], patch, meta["namespace"], subresource="status")

    async def sync_jobs(self, adapter: adapters.Adapter, cluster: str, jobs: list[dict[str, Any]],
                        workload: str) -> None:
        """The objects on the winning worker: each created when missing, else its status mirrored on the
        manager's (upstream's SyncJob)."""
        worker = self.workers.usable(cluster)
        if worker is None or worker.kube is None or adapter.resource.plural not in worker.informers:
            return
        for job in jobs:
            meta = job["metadata"]
            remote = worker.informers[adapter.resource.plural].get(f"{meta['namespace']}/{meta['name']}")
            if remote is not None:
                await self._job_status(adapter, job, adapter.mirrored(job, remote))
                continue
            try:
                await worker.kube.create(adapter.resource, adapter.clone(job, workload, self.workers.origin),
                                         meta["namespace"])
                log.info("multikueue job created", extra={"fields": {"kind": adapter.resource.kind,
                                                                     "job": key_of(job), "cluster": cluster}})
            except ApiError as exc:
                if exc.status != 409:
                    raise

    async def _job_status(self, adapter: adapters.Adapter, job: dict[str, Any], wanted: dict[str, Any] | None) -> None:
        """The manager's object's status made ``wanted`` (keys it no longer has set to null), on the
        version it was read at; None or the same: nothing written."""
        status = job.get("status") or {}
        if wanted is None or status == wanted:
            return
        meta = job["metadata"]
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": merge_patch(status, wanted)}
        await self.kube.merge_patch(adapter.resource, meta["name"], patch, meta["namespace"], subresource="status")

    def _remote(self, cluster: str, plural: str, key: str) -> dict[str, Any] | None:
        worker = self.workers.usable(cluster)
        if worker is None or plural not in worker.informers:
            return None
        return worker.informers[plural].get(key)

    async def remove_remote(self, cluster: str, namespace: str, name: str) -> None:
        """The worker's objects for this Workload (found by their prebuilt label, whatever their kind:
        upstream's DeleteRemoteObject), then its copy."""
        worker = self.workers.usable(cluster)
        if worker is None or worker.kube is None or "workloads" not in worker.informers:
            return
        for adapter in adapters.ADAPTERS:
            if adapter.resource.plural not in worker.informers:
                continue
            res = adapter.resource
            for obj in list(worker.informers[res.plural].store.values()):
                meta = obj["metadata"]
                if meta["namespace"] == namespace and name in adapter.workloads_of(obj):
                    await self._delete(worker.kube, res, namespace, meta["name"])
        if worker.informers["workloads"].get(f"{namespace}/{name}") is not None:
            await self._delete(worker.kube, r.WORKLOAD, namespace, name)

    @staticmethod
    async def _delete(kube: Kube | None, res: r.Resource, namespace: str, name: str) -> None:
        if kube is None:
            return
        try:
            await kube.delete(res, name, namespace)
        except ApiError as exc:
            if exc.status != 404:
                raise


def _lost_since(local: dict[str, Any]) -> float | None:
    """The worker-lost instant on the Workload, None when absent or not RFC 3339 (then recorded anew)."""
    value = (local["metadata"].get("annotations") or {}).get(mk.WORKER_LOST_SINCE_ANNOTATION)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    return when.timestamp() if when is not None and when.tzinfo is not None else None


def _gvk(owner: dict[str, Any]) -> str:
    """apimachinery's GroupVersionKind.String() of an owner reference: ``batch/v1, Kind=Job``."""
    api_version = str(owner.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={owner.get('kind', '')}"
