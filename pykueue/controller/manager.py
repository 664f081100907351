"""The controller: informers feed the engine, the engine decides, writers publish its decisions.

Everything runs on one asyncio loop, so the engine (pure, synchronous) is only ever touched from one
place at a time and needs no locks. The order of work:

1. informers for the queue objects and priority classes sync first, then Workloads (a Workload whose
   status records an admission re-enters the engine admitted, so a restart never admits twice), then
   Jobs;
2. every change an informer sees is turned into the engine call the simulator would make
   (`translate` goes through the same API layer as `simulate`) and a scheduling pass is requested;
3. the scheduling loop runs `Engine.schedule(now)` on the wall clock and marks the workloads its
   events touched;
4. the status writer applies their status in batches, releases before reservations, so the API
   never shows more admitted than the engine allows at any moment;
5. the job side (`jobs.JobReconciler`, one per integration: Jobs, and Pods when the pod integration
   or one that queues through it is on) follows each Workload's status: create, suspend or gate, start,
   stop, finish, through the job framework (`pykueue.jobs.framework`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, TypeVar

from pykueue.api.priority import PriorityClasses
from pykueue.api.validation import SYSTEM_PRIORITY_CLASSES
from pykueue.controller.core import decisions, translate, views
from pykueue.controller.core.events import Recorder
from pykueue.controller.core.queue_objects import KINDS as QUEUE_KINDS
from pykueue.controller.core.queue_objects import QueueObjects
from pykueue.controller.core.queue_status import QueueStatusWriter
from pykueue.controller.core.workload_reconciler import WorkloadReconciler
from pykueue.controller.core.workload_records import WorkloadRecords
from pykueue.controller.core.workload_writer import WorkloadStatusWriter
from pykueue.controller.jobs import owners
from pykueue.controller.jobs.group_owners import GroupOwnerKeys, GroupOwnerReconciler
from pykueue.controller.jobs.reconciler import (
    GROUP_PREFIX,
    JobKeys,
    JobReconciler,
    ObjectKeys,
    PodKeys,
    PodsLinger,
    Rules,
)
from pykueue.controller.jobs.reconciler import RESOURCES as JOB_RESOURCES
from pykueue.controller.multikueue.wiring import MultiKueue
from pykueue.controller.observe.metrics import INADMISSIBLE, SUCCESS, Metrics
from pykueue.controller.runtime import supervise
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.events import EngineError
from pykueue.engine.model import US
from pykueue.engine.workload import State
from pykueue.jobs import registry
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod import groups as pod_rules
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import DELETED, MODIFIED, Informer, key_of
from pykueue.kube.workqueue import WorkQueue

log = logging.getLogger("pykueue.controller")

BURST_SECONDS = 0.1  # how long a scheduling pass waits for the rest of a burst of changes
RETRY_BASE_SECONDS = supervise.BASE_SECONDS
# Pods no watch shows (a deleted Job's, one that lost Kueue's label alive) are listed this often until they end
UNWATCHED_SECONDS = 5.0
# told (Event, metrics) once the status carrying them has landed, by the status writer
_ANNOUNCED_ON_WRITE = frozenset({ev.QUOTA_RESERVED, ev.ADMITTED})
RESYNC_SECONDS = 30.0  # every cached object is checked against the engine again (level-triggered)
T = TypeVar("T")


class Controller:
    def __init__(self, kube: Kube, config: model.Config, *, clock=time.time, metrics: Metrics | None = None,
                 namespace: str | None = None) -> None:
        self.kube = kube
        self.namespace = namespace  # the controller's (its MultiKueue kubeconfig Secrets'); None: pykueue-system
        # A live job stops some time after its eviction: the engine holds its quota until the job side
        # sees it stopped (job_stopped), so what runs never exceeds the quota.
        self.engine = Engine(config, jobs_stop_at_once=False)
        self.clock = clock
        self.informers: dict[str, Informer] = {}
        self._handler_failures: dict[tuple[str, str], int] = {}
        self._retries_pending: dict[tuple[str, str], dict[str, Any]] = {}  # the key's last object, one retry each
        self.classes_by_key: dict[str, dict[str, Any]] = {}
        self.kick_wake = asyncio.Event()
        self.jobs = WorkQueue()
        self.pod_work = WorkQueue()  # plain Pods and pod groups (PodKeys)
        rules = Rules.from_config(config, lambda name: self.cached("namespaces", name))  # which jobs are Kueue's
        self._pods_on = "pod" in rules.frameworks  # the pod integration: on, or implied by a kind queued through it
        self.job_keys = JobKeys({}, rules, "batch/job" in config.frameworks)
        self.pod_keys = PodKeys({}, rules)
        # the kinds that keep their Pods' group Workloads themselves (StatefulSets, LWSs: Integration.groups),
        # each with its own keys and queue: their Workloads and their Pods' labels
        self.group_keys = {i.kind: GroupOwnerKeys(i, {}, {}) for i in registry.INTEGRATIONS if i.groups is not None}
        self.group_work = {kind: WorkQueue() for kind in self.group_keys}
        # the custom job kinds (RayClusters, RayJobs, JobSets, ...: Integration.live), each with its own keys
        # and queue while its integration is on
        self.crd_keys: dict[str, ObjectKeys] = {i.kind: ObjectKeys(i, {}, rules) for i in registry.INTEGRATIONS
                                                if i.live is not None and i.framework in config.frameworks}
        self.crd_work = {kind: WorkQueue() for kind in self.crd_keys}
        self.job_keys.owners = self._crd_object  # a Job a RayJob, RayCluster or JobSet owns is its child
        self.workload_owners = owners.OwnerIndex()  # the cached Workloads by owner name, from their informer
        self.outliving_jobs: dict[str, tuple[str, str]] = {}  # deleted Jobs' UIDs -> (namespace, name): see on_job
        self.cycles = 0
        self.admissions = 0
        self.rebuilds = 0  # the engine started afresh from the caches after a failure inside it
        self.ready = asyncio.Event()
        self.job_sync: JobReconciler | None = None
        self.multikueue: MultiKueue | None = None  # started once the Workloads and Jobs are cached
        self.pod_sync: JobReconciler | None = None
        self.recorder = Recorder(kube)
        self.records = WorkloadRecords()  # each Workload object's memory, one record per UID
        self.status_writer = WorkloadStatusWriter(self.engine, kube, self.informers, self.recorder, clock, self.kick,
                                                  self.records)
        self.status_writer.announce = self.announce
        self.queue_objects = QueueObjects(self.engine, kube, self.recorder, self.informers, self._queues_changed)
        self.queue_status = QueueStatusWriter(self.engine, kube, self.informers, clock)
        self.queues_dirty = self.queue_status.dirty
        self.metrics = metrics or Metrics()
        self.workload_sync = WorkloadReconciler(
            self.engine, kube, self.informers, self.records, self.status_writer, self.recorder, clock,
            priority_objects=lambda: list(self.classes_by_key.values()), queues_changed=self._queues_changed,
            pods_ready=lambda key: self.metrics.pods_ready(key, self), jobs=self)
        self.metrics.attach(self)

    # ---- wiring ----------------------------------------------------------------------------------

    def _informer(self, res: r.Resource, handler, label_selector: str | None = None) -> Informer:
        inf = Informer(self.kube, res, handler, on_error=self._handler_failed, label_selector=label_selector)
        self.informers[res.plural] = inf
        return inf

    def _handler_failed(self, inf: Informer, key: str, last: dict[str, Any], exc: Exception) -> None:
        """A handler raised after the cache moved on: the key is synced again from the cache (with
        backoff), so the change is never lost; ``last`` is the object it was handling. One retry per key
        is pending at a time (as a work queue holds a key once): further failures before it runs only
        update what it hands a deletion, so a burst of failing events is not handled again once each."""
        ident = (inf.resource.plural, key)
        failures = self._handler_failures.get(ident, 0)
        self._handler_failures[ident] = failures + 1
        if ident in self._retries_pending:
            self._retries_pending[ident] = last
            return
        self._retries_pending[ident] = last
        delay = supervise.retry_delay(failures, RETRY_BASE_SECONDS)
        log.warning("event not handled; syncing the object again", extra={"fields": {
            "resource": inf.resource.plural, "key": key, "error": repr(exc), "retryIn": f"{delay:g}s"}})
        asyncio.get_running_loop().call_later(delay, self._resync_key, inf, key)

    def _resync_key(self, inf: Informer, key: str) -> None:
        last = self._retries_pending.pop((inf.resource.plural, key))
        obj = inf.get(key)
        try:
            if obj is not None:
                inf.handler(MODIFIED, None, obj)
            else:
                inf.handler(DELETED, last, None)
            self._handler_failures.pop((inf.resource.plural, key), None)
        except Exception as exc:  # noqa: BLE001 - comes back later, never dropped
            self._handler_failed(inf, key, obj or last, exc)

    async def run(self) -> None:
        """Sync, then run every loop until cancelled."""
        tasks: list[asyncio.Task] = []
        try:
            for res in QUEUE_KINDS:
                inf = self._informer(res, lambda t, o, n, res=res: self._queue_object(res, key_of(n or o)))
                tasks.append(supervise.start(f"informer-{res.plural}", inf.run))
            for res in (r.PRIORITY_CLASS, r.WORKLOAD_PRIORITY_CLASS):
                inf = self._informer(res, self.on_priority_class)
                tasks.append(supervise.start(f"informer-{res.plural}", inf.run))
            await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))
            workloads = self._informer(r.WORKLOAD, self.on_workload)
            tasks.append(supervise.start("informer-workloads", workloads.run))
            await workloads.synced.wait()
            flavors = self.informers["resourceflavors"].store
            jobs = self._informer(r.JOB, self.on_job)
            self.job_keys.jobs = jobs.store
            self.job_sync = JobReconciler(self.kube, self.job_keys, workloads.store, flavors, self.priority_classes,
                                          self.clock, self.workload_sync.job_stopped, self.recorder,
                                          wait_for_pods_ready=self.engine.config.wait_for_pods_ready.enable,
                                          owners=self.workload_owners)
            tasks.append(supervise.start("informer-jobs", jobs.run))
            await jobs.synced.wait()
            if self.manages_pods():
                # only the Pods Kueue gated carry the managed label: the rest of the cluster's are not watched
                pods = self._informer(r.POD, self.on_pod, label_selector=f"{pod_rules.MANAGED_LABEL}=true")
                self.pod_keys.pods = pods.store
                self.pod_sync = JobReconciler(self.kube, self.pod_keys, workloads.store, flavors, self.priority_classes,
                                              self.clock, self.workload_sync.job_stopped, self.recorder,
                                              wait_for_pods_ready=self.engine.config.wait_for_pods_ready.enable,
                                              owners=self.workload_owners)
                tasks.append(supervise.start("informer-pods", pods.run))
                await pods.synced.wait()
                tasks.append(supervise.start("pods", lambda: self.pod_work.run(self.pod_sync.reconcile, self._job_error)))
                for kind, keys in self.group_keys.items():
                    if keys.integration.framework in self.engine.config.frameworks:
                        tasks += self._start_group_owner(kind, pods.store, workloads.store, flavors)
            for kind in self.crd_keys:
                tasks += self._start_crd_kind(kind, workloads.store, flavors)
            for res in self._unwatched_children():
                tasks += self._start_children(res)
            self.multikueue = MultiKueue(self.kube, self.informers, self.engine.config.multi_kueue, self.recorder,
                                         self.clock, self.namespace)
            tasks += self.multikueue.start(self._informer)
            tasks += [
                supervise.start("scheduler", self.schedule_loop),
                supervise.start("status-writer", self.status_writer.run),
                supervise.start("queue-status", self.queue_status.run),
                supervise.start("pending-sweep", self.status_writer.sweep),
                supervise.start("events", self.recorder.run),
                supervise.start("jobs", lambda: self.jobs.run(self.job_sync.reconcile, self._job_error)),
                supervise.start("finalizers", lambda: self.queue_objects.finalizers.run(
                    self.queue_objects.reconcile_finalizer, self.queue_objects.finalizer_error)),
                supervise.start("workload-writes", lambda: self.workload_sync.writes.run(
                    self.workload_sync.write, self.workload_sync.write_error)),
                supervise.start("resync", self.resync_loop),
                supervise.start("unwatched-pods", self._pods_loop),
            ]
            self.ready.set()
            for key in self.engine.workload_keys(State.STOPPING):  # restored evicted, decided now
                if (obj := workloads.get(key)) is not None:
                    self.workload_sync.release_if_nothing_runs(key, obj)
            log.info("controller ready", extra={"fields": {
                "workloads": len(self.engine.workload_keys()), "clusterQueues": len(self.engine.cluster_queue_names())}})
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def cached(self, plural: str, key: str) -> dict[str, Any] | None:
        """An informer's copy of an object (``readsource.ReadSource``, for the metrics and visibility)."""
        inf = self.informers.get(plural)
        return inf.get(key) if inf is not None else None

    def now_us(self) -> int:
        """The engine's time: whole microseconds of the wall clock (Unix epoch)."""
        return round(self.clock() * US)

    def kick(self) -> None:
        self.kick_wake.set()

    # ---- informer handlers: API -> engine --------------------------------------------------------

    def _queues_changed(self) -> None:
        self.queues_dirty.set()
        self.kick()

    def on_priority_class(self, kind: str, old: dict | None, new: dict | None) -> None:
        obj = new or old
        assert obj is not None
        key = f"{obj.get('kind')}/{obj['metadata']['name']}"
        self.workload_sync.converted.clear()  # priorities resolve differently now
        if kind == DELETED:
            self.classes_by_key.pop(key, None)
        else:
            self.classes_by_key[key] = obj

    def _crd_object(self, kind: str, key: str) -> dict[str, Any] | None:
        """The cached RayCluster, RayJob or JobSet ``key`` (None for another kind, or one whose
        integration is off)."""
        keys = self.crd_keys.get(kind)
        return None if keys is None else keys.objects.get(key)

    def priority_classes(self) -> PriorityClasses:
        """The classes as the API layer's resolver takes them (for the Job side)."""
        classes = PriorityClasses(pod=dict(SYSTEM_PRIORITY_CLASSES), workload={})
        for obj in self.classes_by_key.values():
            if obj.get("kind") == "WorkloadPriorityClass":
                classes.workload[obj["metadata"]["name"]] = obj.get("value", 0)
            else:
                classes.pod[obj["metadata"]["name"]] = obj.get("value", 0)
                if obj.get("globalDefault"):
                    classes.default_pod_class = obj["metadata"]["name"]
        return classes

    def job_present(self, obj: dict[str, Any]) -> bool | None:
        """Whether anything of the job behind the Workload ``obj`` may still run, found in the caches by
        its owner's UID whatever the managed rules say now (``owners.job_runs``); None while a cache it
        could be in is not filled yet, or its kind is not watched (``workload_reconciler.JobSide``)."""
        if not self.ready.is_set():
            return None  # the job caches may not be filled yet: decided once they are (run)
        return owners.job_runs(obj, self._job_kinds())

    def _synced(self, plural: str) -> bool:
        inf = self.informers.get(plural)
        return inf is not None and inf.synced.is_set()

    def _job_kinds(self) -> owners.Kinds:
        """Every job kind pykueue knows, with its cache (None: its objects are not watched, its
        integration being off): a Job's always are, whether or not the Job integration is on."""
        kinds: dict[tuple[str, str], owners.Kind | None] = {
            ("batch", "Job"): owners.Kind(self.job_keys.jobs, self._synced(r.JOB.plural), self.job_keys.load, Job,
                                          outliving=self.outliving_jobs)}
        pod_keys = self.pod_keys
        kinds[owners.POD] = owners.Kind(
            pod_keys.visible(), self._synced(r.POD.plural), pod_keys.load, pod_rules.Pod,
            group_managed=lambda key: pod_keys.load(GROUP_PREFIX + key),
            group=lambda key: pod_keys.group(GROUP_PREFIX + key)) if self.manages_pods() else None
        for integration in registry.INTEGRATIONS:
            if integration.live is not None:
                keys = self.crd_keys.get(integration.kind)
                kinds[(integration.group, integration.kind)] = None if keys is None else owners.Kind(
                    keys.objects, self._synced(integration.resource.plural), keys.load, keys.wrap)
        return kinds

    def _owner_changed(self, group: str, kind: str, obj: dict[str, Any]) -> None:
        """A job's object changed or went: the stopping Workloads it owns are looked at again, so that
        one whose job is no longer managed (its reconciler skips it) is released once the job is
        inactive or gone, without waiting for an event of the Workload's own."""
        meta = obj["metadata"]
        for key in self.workload_owners.owned(group, kind, meta.get("namespace") or "", meta["name"]):
            self._stop_seen(key)

    def _stop_seen(self, key: str) -> None:
        """The STOPPING Workload ``key`` is released if nothing of its job runs any more."""
        if self.engine.state_of(key) is State.STOPPING and (obj := self.cached("workloads", key)) is not None:
            self.workload_sync.release_if_nothing_runs(key, obj)

    def _queue_object(self, res: r.Resource, key: str) -> None:
        """A queue object's event; a Namespace's relabelling may also stop Kueue managing the jobs there,
        which no job event says: their stopping Workloads are looked at again."""
        self.queue_objects.sync(res, key)
        if res is r.NAMESPACE:
            for workload in self.engine.workload_keys(State.STOPPING):
                if workload.startswith(f"{key}/"):
                    self._stop_seen(workload)

    def on_workload(self, kind: str, old: dict | None, new: dict | None) -> None:
        key = key_of(new or old)  # type: ignore[arg-type]
        self.workload_owners.update(key, self.cached("workloads", key))  # the cache already holds the change
        self.workload_sync.handle(kind, old, new)
        if self.multikueue is not None:
            self.multikueue.on_workload(new or old)  # type: ignore[arg-type]

    def on_job(self, kind: str, old: dict | None, new: dict | None) -> None:
        obj = new or old
        assert obj is not None
        meta = obj["metadata"]
        if kind == DELETED and meta.get("uid") and (Job(obj).is_active() or not (obj.get("spec") or {}).get("suspend")) \
                and self.workload_owners.owned("batch", "Job", meta.get("namespace") or "", meta["name"]):
            # deleted while its pods may run: its Workloads' quota is held until a list finds none running
            self.outliving_jobs[meta["uid"]] = (meta.get("namespace") or "", meta["name"])
        self._owner_changed("batch", "Job", obj)  # a Job's stop is seen whether or not Kueue manages it now
        self._child_changed(r.JOB, kind, obj)  # a JobSet's Job: its pods' end may be the JobSet's stop
        if "batch/job" not in self.engine.config.frameworks:
            return  # the Configuration leaves Jobs alone (integrations.frameworks), as upstream does
        if kind != DELETED:
            self.jobs.add(key_of(obj))

    def manages_pods(self) -> bool:
        """The pod integration runs when it is on, or an integration that queues through it is."""
        return self._pods_on

    def on_pod(self, kind: str, old: dict | None, new: dict | None) -> None:
        obj = new or old
        assert obj is not None
        key = self.pod_keys.track(obj, deleted=kind == DELETED)
        self.pod_work.add(key)
        if key.startswith(GROUP_PREFIX):
            self._stop_seen(key[len(GROUP_PREFIX):])  # a pod group's Workload is named after the group
        else:
            self._owner_changed("", "Pod", obj)
        if kind != DELETED:
            # upstream's StatefulSet and LWS Pod reconcilers, on a Pod's create and update: its group labels,
            # and its finalizer once it is being deleted or has ended (a replaced replica's, a deleted set's)
            for owner_kind, keys in self.group_keys.items():
                if keys.running and (owner := keys.key_for_pod(obj)) is not None:
                    self.group_work[owner_kind].add(owner)

    def _start_group_owner(self, kind: str, pods: dict[str, Any], workloads: dict[str, Any], flavors: dict[str, Any]
                           ) -> list[asyncio.Task]:
        """The informer and work queue of one kind that keeps its Pods' group Workloads (upstream's
        statefulset and leaderworkerset reconcilers). A CRD's informer is not waited on: until its
        operator installs it the informer waits for it, and the rest runs."""
        keys, work = self.group_keys[kind], self.group_work[kind]
        res = keys.integration.resource
        inf = self._informer(res, lambda t, o, n: None if t == DELETED else work.add(key_of(n or o)))
        keys.sets, keys.pods = inf.store, pods
        keys.running = True
        keys.label_keys = tuple(self.engine.config.label_keys_to_copy)
        sync = GroupOwnerReconciler(keys, JobReconciler(
            self.kube, keys, workloads, flavors, self.priority_classes, self.clock,
            self.workload_sync.job_stopped, self.recorder,
            wait_for_pods_ready=self.engine.config.wait_for_pods_ready.enable, hold=self.workload_sync.hold))

        async def watch() -> None:
            if keys.rules.crd:
                await self._served(res)
            await inf.run()
        return [supervise.start(f"informer-{res.plural}", watch),
                supervise.start(res.plural, lambda: work.run(sync.reconcile, self._job_error))]

    def _start_crd_kind(self, kind: str, workloads: dict[str, Any], flavors: dict[str, Any]) -> list[asyncio.Task]:
        """The informer and work queue of one custom job kind (Ray's, JobSet). Not waited on: until
        its operator's CRDs are installed the informer retries with backoff, and the rest of the
        controller runs."""
        res = JOB_RESOURCES[kind]
        work = self.crd_work[kind]

        def handle(event: str, old: dict | None, new: dict | None) -> None:
            self._owner_changed(self.crd_keys[kind].group, kind, new or old)  # type: ignore[arg-type]
            if event != DELETED:
                work.add(key_of(new or old))
            else:
                self.crd_keys[kind].released(key_of(old))  # type: ignore[arg-type]  # no memory of its children
            self._child_changed(res, event, new or old)  # type: ignore[arg-type]  # a RayJob's RayCluster
        inf = self._informer(res, handle)
        self.crd_keys[kind].objects = inf.store
        sync = JobReconciler(self.kube, self.crd_keys[kind], workloads, flavors, self.priority_classes, self.clock,
                             self.workload_sync.job_stopped, self.recorder,
                             wait_for_pods_ready=self.engine.config.wait_for_pods_ready.enable,
                             owners=self.workload_owners)

        async def watch() -> None:
            await self._served(res)
            await inf.run()
        return [supervise.start(f"informer-{res.plural}", watch),
                supervise.start(res.plural, lambda: work.run(sync.reconcile, self._job_error))]

    async def _pods_loop(self) -> None:
        """What no watch shows, fetched every few seconds while there is any: the Pods that left the
        managed-label watch alive, and the Pods of deleted Jobs."""
        while True:
            await asyncio.sleep(UNWATCHED_SECONDS)
            await self.recheck_departed()
            await self.recheck_outliving()

    async def _list_pods(self, what: str, *, refused_is_gone: bool, **query: str) -> list[dict[str, Any]] | None:
        """Pods no watch shows, listed (the chart's read-only grant); None when the list failed (what they
        hold stays held). With ``refused_is_gone``, a list RBAC refuses is taken as none, with a warning:
        a deleted Job's quota held forever on a grant the install lacks would stop its queue."""
        try:
            return (await self.kube.list(r.POD, **query)).get("items") or []
        except ApiError as exc:
            if exc.status not in (401, 403) or not refused_is_gone:
                return None
            log.warning("pods cannot be listed; what they held is released", extra={"fields": {
                "for": what, "error": str(exc)}})
            return []
        except Exception as exc:  # noqa: BLE001 - transport: listed again next time
            log.debug("pods not listed", extra={"fields": {"for": what, "error": str(exc)}})
            return None

    async def recheck_outliving(self) -> None:
        """The Jobs deleted while their pods may run (``outliving_jobs``): their pods listed by the Job
        controller's ``batch.kubernetes.io/controller-uid`` label; once none may run (``owners.pod_may_run``)
        the Job leaves, and its stopping Workloads are looked at (their quota goes, their finalizer too).
        Beyond upstream, which releases once the Job object is gone."""
        now = self.clock()
        for uid, (namespace, name) in list(self.outliving_jobs.items()):
            found = await self._list_pods(f"{namespace}/{name}", refused_is_gone=True, labelSelector=f"batch.kubernetes.io/controller-uid={uid}",
                                          fieldSelector=f"metadata.namespace={namespace}")
            if found is None:
                continue  # kept (still counted) and listed next time
            if any(owners.pod_may_run(p, now, translate.parse_time(p["metadata"].get("deletionTimestamp")))
                   for p in found):
                continue
            del self.outliving_jobs[uid]
            self._owner_changed("batch", "Job", {"metadata": {"namespace": namespace, "name": name}})

    async def recheck_departed(self) -> None:
        """The Pods that left the managed-label watch alive (``PodKeys.departed``), fetched again: one that
        has ended, is gone or is labelled again leaves, and the Workload it held back is looked at. A
        list by name, as the informer's own verb (no watch sees them any more)."""
        for key in list(self.pod_keys.departed):
            namespace, name = key.split("/", 1)
            found = await self._list_pods(key, refused_is_gone=False, fieldSelector=f"metadata.namespace={namespace},metadata.name={name}")
            if found is None:
                continue  # kept departed (still counted) and fetched next time
            job_key = self.pod_keys.recheck(key, found[0] if found else None)
            if job_key is None:
                continue
            self.pod_work.add(job_key)
            if job_key.startswith(GROUP_PREFIX):
                self._stop_seen(job_key[len(GROUP_PREFIX):])
            else:
                self._owner_changed("", "Pod", {"metadata": {"namespace": namespace, "name": name}})

    def _child_changed(self, res: r.Resource, event: str, obj: dict[str, Any]) -> None:
        """An object a custom job kind controls and reads changed (``Integration.live.children``: a JobSet's
        Job, a RayJob's or RayService's RayCluster, which the autoscaler scales and KubeRay makes and
        removes): the index its parent is wrapped with is kept, and the parent is reconciled and its
        stopping Workloads looked at, as upstream's controllers watch the objects they own."""
        for kind, keys in self.crd_keys.items():
            if keys.live.children != res or (parent := keys.child(obj, deleted=event == DELETED)) is None:
                continue
            namespace, name = parent.split("/", 1)
            self._owner_changed(keys.group, kind, {"metadata": {"namespace": namespace, "name": name}})
            self.crd_work[kind].add(parent)

    def _unwatched_children(self) -> list[r.Resource]:
        """The kinds custom job kinds read whose objects no other informer watches (RayClusters for the
        RayJobs alone, the RayCluster integration being off)."""
        watched = {r.JOB.plural, *(JOB_RESOURCES[kind].plural for kind in self.crd_keys)}
        wanted = {keys.live.children.plural: keys.live.children for keys in self.crd_keys.values()
                  if keys.live.children is not None}
        return [res for plural, res in wanted.items() if plural not in watched]

    def _start_children(self, res: r.Resource) -> list[asyncio.Task]:
        """An informer for a kind only read as children (``_unwatched_children``): its changes reach
        their parents. Not waited on, as a custom kind's own informer is not."""
        inf = self._informer(res, lambda event, old, new: self._child_changed(res, event, new or old))

        async def watch() -> None:
            await self._served(res)
            await inf.run()
        return [supervise.start(f"informer-{res.plural}", watch)]

    async def _served(self, res: r.Resource) -> None:
        """Return once the API server serves ``res``; until then say once, clearly, that its CRD is
        missing (an integration whose operator is not installed waits for it, as upstream's does)."""
        failures = 0
        while True:
            response = await self.kube.raw("GET", res.path(), query={"limit": 1})
            async with response:
                status = response.status
            if status != 404:
                return
            if failures == 0:
                log.warning("the integration waits for its CRD", extra={"fields": {
                    "crd": f"{res.plural}.{res.group}", "kind": res.kind}})
            await asyncio.sleep(supervise.retry_delay(failures, 1.0))
            failures += 1

    def enqueue_owner(self, workload: dict[str, Any]) -> None:
        for key in self.job_keys.keys_for_workload(workload):
            self.jobs.add(key)
        for kind, keys in self.crd_keys.items():
            for key in keys.keys_for_workload(workload):
                self.crd_work[kind].add(key)
        for key in self.pod_keys.keys_for_workload(workload):
            self.pod_work.add(key)
        for kind, group_keys in self.group_keys.items():
            for key in group_keys.keys_for_workload(workload):
                self.group_work[kind].add(key)

    # ---- scheduling ------------------------------------------------------------------------------

    async def schedule_loop(self) -> None:
        while True:
            wake = self.engine.next_wakeup()
            timeout = None if wake is None else max(0.0, wake / US - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.kick_wake.wait(), timeout)
            if self.kick_wake.is_set():
                # A burst of changes (one `kubectl apply` of many Workloads) lands as separate watch
                # events: let it land, so the pass decides over all of it as the simulator's instant does.
                await asyncio.sleep(BURST_SECONDS)
            self.kick_wake.clear()
            try:
                self.run_cycle()
            except Exception as exc:  # noqa: BLE001 - a bug inside the engine: its state may be half-changed
                self.rebuild(exc)
                raise  # the supervisor counts the failure (and /healthz reports a streak of them)
            await asyncio.sleep(0)

    def rebuild(self, cause: Exception) -> None:
        """Start the engine afresh from the informer caches, as a restart does, instead of going on from
        state a failure inside it may have left half-changed. The Engine object stays (every writer
        holds it); its state is made anew: queue objects first, then every cached Workload (a recorded
        admission re-enters admitted, an evicted one still stopping), then their statuses compared again."""
        log.error("engine rebuilt from the caches after a failure", exc_info=cause, extra={"fields": {
            "error": repr(cause)}})
        self.rebuilds += 1
        self.engine.reset()
        self.queue_objects.seen.clear()
        self.queue_objects.problems.clear()
        with self.engine.bulk():
            self.queue_objects.resync()
            self.workload_sync.reload()
        for key in self.engine.workload_keys():
            self.status_writer.mark(key)
        self._queues_changed()

    def run_cycle(self) -> None:
        """One `Engine.schedule` at the current time; its events mark what must be written."""
        now = self.now_us()
        attempted, started = views.has_candidates(self.engine), time.perf_counter()
        self._mark_quiet_releases()  # before the pass: the reservations it makes are written after them
        try:
            events = self.engine.take_events() + self.engine.schedule(now)
        except EngineError as exc:
            log.error("scheduling stopped for this pass", extra={"fields": {"error": str(exc)}})
            events = self.engine.take_events()
        self._mark_quiet_releases()
        self.cycles += 1
        # One admission attempt per pass that had something to try, as upstream counts its cycles.
        reserved = any(e.type == ev.QUOTA_RESERVED for e in events)
        if reserved or attempted or any(e.type == ev.REQUEUED for e in events):
            self.metrics.admission_attempt(SUCCESS if reserved else INADMISSIBLE, time.perf_counter() - started)
        for event in events:
            self.on_event(event)
        self.workload_sync.flush_unevaluated()
        self.queue_objects.recheck_terminating()  # a deleted queue's last workload may have left

    def _mark_quiet_releases(self) -> None:
        """Reservations the engine gave back without an event (a LocalQueue deleted, a queue held, while
        checks were pending): their status is due now, not at the next pending-message sweep, so the
        status writer writes the release before any reservation of the quota it freed."""
        for key in self.engine.take_quiet_releases():
            self.status_writer.mark(key)

    def on_event(self, event: ev.Event) -> None:
        """One decision fanned out: a log line, metrics, the Kubernetes Event, then the status it moves."""
        key = event.workload
        reason = decisions.reason_of(event)
        decisions.log_line(event, reason)
        if event.type not in _ANNOUNCED_ON_WRITE:
            self.announce(event, reason)
        self.workload_sync.on_event(event)
        self.status_writer.note(event, reason)
        if event.type == ev.ADMITTED:
            self.admissions += 1
        self.status_writer.mark(key)
        self.queues_dirty.set()

    def announce(self, event: ev.Event, reason: str | None) -> None:
        """A decision's metrics and Kubernetes Event; a reservation's and an admission's come from the
        status writer once their write has landed (upstream records them after its apply)."""
        self.metrics.on_event(event, self)
        workloads = self.informers.get("workloads")
        decisions.record(self.recorder, workloads.get(event.workload) if workloads else None, event, reason)

    async def resync_loop(self) -> None:
        """Level-triggered safety net, as controller-runtime's periodic resync: every cached object is
        compared with the engine again; what a lost event or a failed handler left behind is repaired
        (a Workload the engine lacks is added, one the API no longer has is removed)."""
        while True:
            await asyncio.sleep(RESYNC_SECONDS)
            self.resync()

    def resync(self) -> None:
        self.queue_objects.resync()
        self.workload_sync.resync()

    # ---- odds and ends ---------------------------------------------------------------------------

    def _job_error(self, key: str, exc: Exception) -> None:
        if isinstance(exc, PodsLinger):  # routine: a stopped job's Pods still terminating
            log.debug("job's pods may still run; its quota stays held", extra={"fields": {"job": key}})
            return
        log.warning("job not reconciled; retrying", extra={"fields": {"job": key, "error": str(exc)}})

