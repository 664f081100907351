"""The job side of the controller: one reconciler that drives every integration through the job framework.

Like upstream's jobframework reconciler this reads only API objects (the integration's objects and their
Workloads, from the informers' caches), never the engine: the Workload's status is the contract between
the two halves. What to write is decided by the pure ``pykueue.jobs.framework.reconcile``; this module
finds the objects behind a key (``JobKeys``, ``PodKeys``), carries the writes out, and resolves the
priority of a Workload it creates. A write that fails raises, and the work queue brings the key back.
"""

from __future__ import annotations

import logging
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykueue.api.models.kueue_v1beta2 import PriorityClassRef
from pykueue.api.priority import PriorityClasses, Resolved, resolve
from pykueue.controller.core.events import Recorder
from pykueue.controller.core.translate import parse_time
from pykueue.controller.core.workload_status import rfc3339
from pykueue.controller.jobs import owners as owner_index
from pykueue.engine import model
from pykueue.jobs import framework, managed, prebuilt, registry, slicing
from pykueue.jobs.framework import GenericJob, OneObject
from pykueue.jobs.framework.workload import (
    JOB_UID_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    queue_name,
    workload_name_for_owner,
)
from pykueue.jobs.integration import Frameworks
from pykueue.jobs.integration import Integration as KindRecord
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod import groups as pods
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube

log = logging.getLogger("pykueue.jobs")
MANAGER = "kueue-job-controller"
RECLAIMABLE_PODS_MANAGER = "kueue-reclaimable-pods"
GROUP_PREFIX = "group:"  # a pod group's key in the work queue: group:<namespace>/<group name>
ORPHAN_PREFIX = "orphan:"  # an orphaned Workload's key in the Job queue: orphan:<namespace>/<workload name>
OWNER_NOT_FOUND = ("OwnerNotFound", "The workload's owner no longer exists")
DELETED_WORKLOAD = "DeletedWorkload"  # jobframework.ReasonDeletedWorkload
CREATED_WORKLOAD = "CreatedWorkload"  # jobframework.ReasonCreatedWorkload
# what the job side writes, by kind: every integration's objects and Workloads
RESOURCES = {**{i.kind: i.resource for i in registry.INTEGRATIONS}, "Workload": r.WORKLOAD}
Store = dict[str, dict[str, Any]]
JOB_CONDITIONS = ("PodsReady", "Finished")  # the Workload conditions the job side writes (field manager MANAGER)


@dataclass(frozen=True, slots=True)
class Rules:
    """What the Configuration says about which jobs are Kueue's and what their Workloads carry
    (``pykueue.jobs.managed``): manageJobsWithoutQueueName, managedJobsNamespaceSelector with the
    namespaces' labels, the integrations that are on, and labelKeysToCopy."""

    manage_without_queue_name: bool = False
    scope: managed.Scope = managed.DEFAULT_SCOPE
    frameworks: Frameworks = field(default_factory=lambda: registry.enabled(model.Config().frameworks))
    label_keys: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: model.Config, namespace: Callable[[str], dict[str, Any] | None]) -> Rules:
        """``namespace(name)``: the cached Namespace object, None when not seen."""
        def labels(name: str) -> dict[str, str] | None:
            obj = namespace(name)
            return None if obj is None else (obj.get("metadata") or {}).get("labels") or {}

        return cls(config.manage_jobs_without_queue_name,
                   managed.Scope(config.managed_jobs_namespace_selector, labels),
                   registry.enabled(config.frameworks), config.label_keys_to_copy)

    def reconciles(self, obj: dict[str, Any]) -> bool:
        """Upstream's gate before a job is reconciled: its namespace selected, it names a queue (or every
        job is Kueue's), and no job of an integration that is on owns it (it is queued with that one)."""
        meta = obj["metadata"]
        if not managed.reconciled(queue_name(obj), meta.get("namespace") or "", self.manage_without_queue_name,
                                  self.scope):
            return False
        return managed.managed_owner(obj, self.frameworks) is None


def orphaned(workload: dict[str, Any]) -> bool:
    """Upstream's isOrphanedWorkload with FinishOrphanedWorkloads (on by default in v0.18), for one not yet
    finished nor being deleted: it names the job it was made for (the job-uid label) but no owner, as
    after ``kubectl delete --cascade=orphan`` of its job."""
    meta = workload["metadata"]
    return (not meta.get("ownerReferences") and not meta.get("deletionTimestamp")
            and bool((meta.get("labels") or {}).get(JOB_UID_LABEL)) and not framework.finished_workload(workload))


def _rules(rules: Rules | bool) -> Rules:
    """A bare bool is manageJobsWithoutQueueName, with everything else as upstream's defaults."""
    return Rules(manage_without_queue_name=rules) if isinstance(rules, bool) else rules


class Integration(Protocol):
    """Finds the GenericJob behind a work-queue key, and the keys a Workload's owners stand for."""

    label_keys: tuple[str, ...]  # integrations.labelKeysToCopy

    def load(self, key: str) -> GenericJob | None: ...

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]: ...


class JobKeys:
    """batch/v1 Jobs: the key is the Job's."""

    def __init__(self, jobs: Store, rules: Rules | bool, enabled: bool = True,
                 owners: Callable[[str, str], dict[str, Any] | None] | None = None) -> None:
        self.jobs = jobs
        self.rules = _rules(rules)
        self.label_keys = self.rules.label_keys
        self.enabled = enabled  # batch/job in integrations.frameworks
        # owners(kind, "ns/name"): the cached object of another kind that may own a Job (a RayJob, a
        # RayCluster), None when not cached
        self.owners = owners

    def load(self, key: str) -> GenericJob | None:
        obj = self.jobs.get(key)
        if obj is None or not self.enabled or not self.rules.reconciles(obj):
            return None
        return Job(obj)

    def child(self, key: str) -> tuple[dict[str, Any], str] | None:
        """A Job a managed job owns (upstream's job that is not top-level), with the key of the Workload
        its owner's would be; None for any other. Without manageJobsWithoutQueueName the owner must name a
        queue, as upstream's FindAncestorJobManagedByKueue reads it from the owner itself: a Job owner is
        looked up here, any other kind through ``owners``; an owner not cached leaves the Job alone."""
        obj = self.jobs.get(key)
        if obj is None or not self.enabled:
            return None
        owner = managed.managed_owner(obj, self.rules.frameworks)
        namespace = obj["metadata"].get("namespace") or ""
        if owner is None or not self.rules.scope.selected(namespace):
            return None
        parent = self._owner(str(owner.get("kind") or ""), f"{namespace}/{owner.get('name')}")
        if not self.rules.manage_without_queue_name and (parent is None or not queue_name(parent)):
            return None
        # an owner naming a prebuilt Workload (a MultiKueue worker's copy) runs under that one, as upstream
        # finds the parent's Workload by its owner reference rather than by the name it would make
        prebuilt_name = ((parent or {}).get("metadata", {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL)
        group = str(owner.get("apiVersion") or "").rpartition("/")[0]
        name = prebuilt_name or self._sliced_name(parent, group) or workload_name_for_owner(
            str(owner.get("kind")), group, str(owner.get("name")), owner.get("uid") or None)
        return obj, f"{namespace}/{name}"

    def _sliced_name(self, parent: dict[str, Any] | None, group: str) -> str | None:
        """An elastic owner's Workload is its current slice, named by its own GenericJob (an elastic
        RayJob's after its generation and its live cluster's); None for any other owner."""
        if parent is None or not slicing.enabled(parent):
            return None
        integration = self.rules.frameworks.owner_integration(group, str(parent.get("kind") or ""))
        if integration is None or integration.live is None:
            return None
        return integration.live.wrap(parent, []).workload_name()

    def _owner(self, kind: str, key: str) -> dict[str, Any] | None:
        if kind == "Job":
            return self.jobs.get(key)
        return None if self.owners is None else self.owners(kind, key)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        namespace = workload["metadata"]["namespace"]
        if orphaned(workload):  # finished here whatever kind made it: one queue handles them all
            return [f"{ORPHAN_PREFIX}{namespace}/{workload['metadata']['name']}"]
        return [f"{namespace}/{o['name']}" for o in workload["metadata"].get("ownerReferences") or []
                if o.get("kind") == "Job" and (o.get("apiVersion") or "").startswith("batch/")]


class ObjectKeys:
    """One custom job kind (a RayCluster, a RayJob, a JobSet), one object per Workload: the key is the
    object's. Its registry record's ``live`` says which objects are Kueue's and wraps them, handed the
    cached objects each controls (``children``, by the parent's key, kept by ``child``: a JobSet's Jobs,
    where its terminating pods are seen; a RayJob's RayClusters, whose live one sizes an elastic job)."""

    def __init__(self, integration: KindRecord, objects: Store, rules: Rules | bool) -> None:
        assert integration.live is not None, integration.framework
        self.live = integration.live
        self.kind, self.group = integration.kind, integration.group
        self.objects = objects
        self.rules = _rules(rules)
        self.label_keys = self.rules.label_keys
        self.children: dict[str, dict[str, dict[str, Any]]] = {}
        # the names of each parent's children that were deleted since its quota was last released: their
        # Pods may still be terminating (``GenericJob.lingering_pods``); forgotten once it is released
        self.ended: dict[str, set[str]] = {}

    def managed(self, obj: dict[str, Any]) -> bool:
        return self.live.managed(obj, self.rules.manage_without_queue_name)

    def wrap(self, obj: dict[str, Any]) -> GenericJob:
        meta = obj["metadata"]
        parent = f"{meta.get('namespace')}/{meta['name']}"
        job = self.live.wrap(obj, list((self.children.get(parent) or {}).values()))
        if isinstance(job, OneObject) and parent in self.ended:
            job.ended_children = tuple(sorted(self.ended[parent]))
        return job

    def released(self, key: str) -> None:
        """``key``'s quota was released: the children it had before are no longer looked for."""
        self.ended.pop(key, None)

    def load(self, key: str) -> GenericJob | None:
        obj = self.objects.get(key)
        if obj is None or not self.managed(obj):
            return None
        return self.wrap(obj) if self.rules.reconciles(obj) else None

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        namespace = workload["metadata"]["namespace"]
        return [f"{namespace}/{o['name']}" for o in workload["metadata"].get("ownerReferences") or []
                if o.get("kind") == self.kind and (o.get("apiVersion") or "").startswith(f"{self.group}/")]

    def child(self, obj: dict[str, Any], deleted: bool) -> str | None:
        """Keep ``children`` current for an event of one of the kind's ``live.children``; the key of the
        object of this kind that controls it (if any)."""
        owner = self.live.parent_of(obj) if self.live.parent_of is not None else None
        if owner is None:
            return None
        meta = obj["metadata"]
        parent, key = f"{meta.get('namespace')}/{owner}", f"{meta.get('namespace')}/{meta['name']}"
        children = self.children.setdefault(parent, {})
        if deleted:
            children.pop(key, None)
            if not children:
                del self.children[parent]
            if self.objects.get(parent) is not None:  # a parent that is gone needs no memory of it
                self.ended.setdefault(parent, set()).add(meta["name"])
        else:
            children[key] = obj
        return parent


class PodKeys:
    """Pods Kueue gated (the informer sees only those with the managed label): a plain Pod's key is its
    own, a pod group's is ``group:<namespace>/<group>``; ``groups`` indexes a group's members.

    ``departed``: Pods the watch reported deleted that may still exist and run: their
    ``kueue.x-k8s.io/managed`` label removed (the API server's watch then sends a delete carrying the
    Pod as it was, label included), or a delete made up by a relist. A Pod really deleted has passed
    through ``deletionTimestamp`` (Kueue's finalizer is on every managed Pod), so one reported deleted
    without it, not ended, is kept: Kueue no longer manages it, but its Workload's quota is not handed
    on while it may run. It stays in its group and in ``visible`` until a fetch (``recheck``) finds it
    ended, gone, or labelled again."""

    def __init__(self, pods_store: Store, rules: Rules | None = None) -> None:
        self.pods = pods_store
        self.groups: dict[str, set[str]] = {}
        self.departed: dict[str, dict[str, Any]] = {}
        self.rules = rules or Rules()
        self.label_keys = self.rules.label_keys

    def visible(self) -> Mapping[str, dict[str, Any]]:
        """The cached managed Pods and the departed ones, by key (where a Workload's Pod is looked up)."""
        return ChainMap(self.pods, self.departed)  # type: ignore[arg-type]

    def departs(self, pod: dict[str, Any], deleted: bool) -> bool:
        """Keep ``departed`` current for a Pod's event; whether the Pod has just departed alive."""
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        alive = not meta.get("deletionTimestamp") and not pods.terminated(pod)
        if deleted and alive:
            self.departed[key] = pod
            return True
        self.departed.pop(key, None)
        return False

    def recheck(self, key: str, now: dict[str, Any] | None) -> str | None:
        """A departed Pod as the API has it now (None: gone): it stays departed while it may run
        unlabelled (None is returned); otherwise it leaves, and its group with it unless it is labelled
        again (its informer adds it back), and the key to reconcile is returned."""
        last = self.departed.get(key)
        if last is None:
            return None
        relabelled = now is not None and (now["metadata"].get("labels") or {}).get(pods.MANAGED_LABEL) == "true"
        if now is not None and not relabelled and not pods.terminated(now):
            self.departed[key] = now
            return None
        del self.departed[key]
        job_key = self.key_for_pod(now or last)
        if job_key.startswith(GROUP_PREFIX) and not relabelled:
            members = self.groups.get(job_key, set())
            members.discard(key)
            if not members:
                self.groups.pop(job_key, None)
        return job_key

    def key_for_pod(self, pod: dict[str, Any]) -> str:
        meta = pod["metadata"]
        group = pods.group_name(pod)
        return f"{GROUP_PREFIX}{meta['namespace']}/{group}" if group else f"{meta['namespace']}/{meta['name']}"

    def track(self, pod: dict[str, Any], deleted: bool) -> str:
        """Keep the group index current; the key to reconcile. A Pod that departed alive stays a member."""
        key = self.key_for_pod(pod)
        if self.departs(pod, deleted):
            return key
        if key.startswith(GROUP_PREFIX):
            members = self.groups.setdefault(key, set())
            meta = pod["metadata"]
            if deleted:
                members.discard(f"{meta['namespace']}/{meta['name']}")
                if not members:
                    self.groups.pop(key, None)
            else:
                members.add(f"{meta['namespace']}/{meta['name']}")
        return key

    def group(self, key: str) -> pods.PodGroup:
        """The cached members of the pod group ``group:<namespace>/<group>``, whatever the managed rules
        say, and those that departed alive (never acted on; the group is active while they may run)."""
        namespace, name = key[len(GROUP_PREFIX):].split("/", 1)
        members = sorted(self.groups.get(key, ()))
        return pods.PodGroup(namespace, name, [self.pods[k] for k in members if k in self.pods],
                             [self.departed[k] for k in members if k in self.departed])

    def load(self, key: str) -> GenericJob | None:
        if not self.rules.scope.selected(key.removeprefix(GROUP_PREFIX).split("/", 1)[0]):
            return None  # a namespace left out (ManagedJobsNamespaceSelectorAlwaysRespected)
        if key.startswith(GROUP_PREFIX):
            return self.group(key)
        pod = self.pods.get(key)
        if pod is None or (pod["metadata"].get("labels") or {}).get(pods.MANAGED_LABEL) != "true" \
                or pods.awaits_parent(pod):
            return None
        return pods.Pod(pod)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        meta = workload["metadata"]
        if (meta.get("annotations") or {}).get(pods.IS_GROUP_WORKLOAD) == "true":
            # a group's, even before its Pods own it (a StatefulSet's, made from the StatefulSet)
            return [f"{GROUP_PREFIX}{meta['namespace']}/{meta['name']}"]
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        return [f"{meta['namespace']}/{o['name']}" for o in owners]


class PodsLinger(LookupError):
    """A stopped job's Pods that its status does not count may still run (``JobStopped.lingering``): its
    quota stays held, and the key comes back with the work queue's backoff (up to 30 s apart)."""


class JobReconciler:
    """Reconciles one key of one integration: the framework decides, this carries the writes out."""

    def __init__(self, kube: Kube, integration: Integration, workloads: Store, flavors: Store,
                 classes: Callable[[], PriorityClasses], now: Callable[[], float],
                 stopped: Callable[[str], object] | None = None, recorder: Recorder | None = None,
                 wait_for_pods_ready: bool = False, owners: owner_index.OwnerIndex | None = None,
                 hold: Callable[[str, bool, str], object] | None = None) -> None:
        self.kube = kube
        self.wait_for_pods_ready = wait_for_pods_ready  # PodsReady is written only under waitForPodsReady
        # Warning events on objects that cannot be queued, each once per (object, message): a job is
        # reconciled again and again while it waits, and one event says it all.
        self.recorder = recorder
        self.warned: dict[str, str] = {}
        # Told NAMESPACE/NAME of a Workload whose evicted job no longer runs: the admission side
        # releases its quota (one writer of the admission: the Workload status writer).
        self.stopped = stopped
        self.hold = hold  # told a Workload's job holds it or lets it go (framework.Hold): the admission side's
        self.integration = integration
        self.workloads = workloads
        self.flavors = flavors
        self.classes = classes
        self.now = now
        self.owners = owners  # the cached Workloads by owner: an earlier object's are found there

    async def reconcile(self, key: str) -> None:
        if key.startswith(ORPHAN_PREFIX):
            # FinishOrphanedWorkloads: finished, its quota is released and its finalizer goes (the
            # admission side removes it from a finished Workload)
            workload = self.workloads.get(key[len(ORPHAN_PREFIX):])
            if workload is not None and orphaned(workload):
                meta = workload["metadata"]
                await self.execute(framework.WorkloadConditions(
                    meta["namespace"], meta["name"], (("Finished", True, *OWNER_NOT_FOUND),), meta.get("uid")))
                log.info("orphaned workload finished", extra={"fields": {"workload": key[len(ORPHAN_PREFIX):]}})
            return
        if isinstance(self.integration, JobKeys) and (child := self.integration.child(key)) is not None:
            await self._child(*child)
            return
        job = self.integration.load(key)
        if job is None:
            return
        prebuilt_name = prebuilt.name_for(job)
        if isinstance(job, OneObject) and prebuilt_name is None and self.owners is not None:
            await self._predecessors(job)
        if isinstance(job, OneObject) and job.sliced and prebuilt_name is None \
                and slicing.enabled(job.obj):
            await self._elastic(job)
            return
        workload = self.workloads.get(f"{job.namespace}/{prebuilt_name or job.workload_name()}")
        if prebuilt_name is not None and isinstance(job, OneObject) and not job.deleting():
            adopting = prebuilt.adopt(job, workload)
            if adopting is not None:
                for action in adopting:
                    await self.execute(action)
                return
        for action in framework.reconcile(job, workload, self.flavors, self.integration.label_keys,
                                          wait_for_pods_ready=self.wait_for_pods_ready):
            await self.execute(action)

    async def _predecessors(self, job: OneObject) -> None:
        """Upstream's ``ensureOneWorkload`` for the Workloads of an earlier object of the job's name (deleted
        and re-created before the garbage collector removed them): each is deleted, and the Workload side,
        finding no job of its owner's UID, releases its quota and takes its finalizer off (a prebuilt
        Workload is the job's by name, and is left to ``prebuilt``)."""
        assert self.owners is not None
        for old in owner_index.predecessors(self.owners, self.workloads, job.obj):
            meta = old["metadata"]
            if meta.get("deletionTimestamp"):
                continue  # going already
            await self.execute(framework.Delete("Workload", meta["namespace"], meta["name"]))
            log.info("workload of an earlier object of the same name deleted", extra={"fields": {
                "object": job.describe(), "workload": f"{meta['namespace']}/{meta['name']}"}})
            await self.execute(framework.Event(
                str(job.obj.get("apiVersion") or ""), job.kind, job.namespace, job.meta["name"], job.meta.get("uid"),
                DELETED_WORKLOAD, f"Deleted not matching Workload: {meta['namespace']}/{meta['name']}"))

    async def _elastic(self, job: OneObject) -> None:
        """An elastic Job or RayCluster (``pykueue.jobs.slicing``): its slices brought to its size first,
        then the usual rule against the slice that stands for it; a pending scale-up leaves it running
        as it is, and an admitted slice's gated pods are released."""
        owned = slicing.owned_not_finished(self.workloads.values(), job.obj)
        workload: Any = owned[-1] if owned else None
        if not job.deleting():
            await self._record_live_cluster(job)
        try:
            built = job.build_workload()
        except ValueError:
            built = None  # the framework says why, on the job and its Workload
        if built is not None and not job.deleting() and not job.finished()[0]:
            decided = slicing.ensure(built["spec"]["podSets"], owned)
            for old in decided.finish:
                meta = old["metadata"]
                await self.execute(framework.WorkloadConditions(meta["namespace"], meta["name"], (
                    ("Finished", True, slicing.OUT_OF_SYNC, slicing.OUT_OF_SYNC_MESSAGE),), meta.get("uid")))
            for updated in decided.updates:
                await self.execute(framework.Replace("Workload", updated["metadata"]["namespace"],
                                                     updated["metadata"]["name"], obj=updated))
            if decided.replaces is not None:
                if self.integration.label_keys:
                    built = framework.with_labels(built, job, self.integration.label_keys)
                await self.execute(framework.CreateWorkload(slicing.replacing(built, decided.replaces),
                                                            job.describe()))
                return
            if not decided.incompatible:
                workload = decided.workload
        ending = job.deleting() or job.finished()[0]
        if workload is not None and not ending and slicing.pending_scale_up(workload, owned):
            return  # it runs on under the slice the pending one replaces
        # A job that ends ends every slice it still has (a scale-up pending then is finished too).
        for each in (owned or [None]) if ending else [workload]:
            for action in framework.reconcile(job, each, self.flavors, self.integration.label_keys,
                                              wait_for_pods_ready=self.wait_for_pods_ready):
                await self.execute(action)
        if workload is not None and framework.admitted(workload) and not job.is_suspended():
            await self._ungate(job, workload)

    async def _record_live_cluster(self, job: OneObject) -> None:
        """Upstream's custom annotations of an elastic RayJob (``slicing_annotations``: its pod-set counts
        and its live cluster's generation) written on it, and on the object in hand, which names the next
        slice from them."""
        try:
            wanted = job.slicing_annotations()
        except ValueError:
            return  # the framework says why, on the job and its Workload
        current = job.meta.get("annotations") or {}
        if not wanted or all(current.get(k) == v for k, v in wanted.items()):
            return
        await self.execute(framework.Patch(job.kind, job.namespace, job.meta["name"],
                                           {"metadata": {"annotations": wanted}}))
        # the cached object stays as the informer has it; this reconcile goes on with the annotations written
        job.obj = {**job.obj, "metadata": {**job.meta, "annotations": {**current, **wanted}}}
        job.meta = job.obj["metadata"]

    async def _ungate(self, job: OneObject, workload: dict[str, Any]) -> None:
        """Upstream's StartWorkloadSlicePods: the pods waiting at the elastic-job gate may run, at most as
        many per pod set as the admitted slice grants beside those already running (``slicing.to_release``):
        a job grown after its slice was decided keeps the rest gated until a slice counts them."""
        selector = job.gated_pods_selector()
        if selector is None:
            return
        listed = await self.kube.list(r.POD, labelSelector=selector)
        mine = [p for p in listed.get("items") or [] if p["metadata"].get("namespace") == job.namespace]
        for pod in slicing.to_release(mine, workload, job.slice_pod_set):
            await self.execute(framework.Patch("Pod", job.namespace, pod["metadata"]["name"],
                                               slicing.ungate_patch(pod), json=True, missing_ok=True))

    async def _child(self, obj: dict[str, Any], owner_workload: str) -> None:
        """Upstream's shouldSuspendChildJob: a running child is suspended while its owner's Workload is
        missing, finished or not admitted; it never gets a Workload of its own."""
        job = Job(obj)
        if job.finished()[0] or job.is_suspended() or job.deleting():
            return
        parent = self.workloads.get(owner_workload)
        if parent is not None and framework.admitted(parent) and not framework.finished_workload(parent):
            return
        await self.execute(framework.Patch("Job", job.namespace, obj["metadata"]["name"], {"spec": {"suspend": True}}))
        log.info("Kueue managed child job suspended", extra={"fields": {"job": f"{job.namespace}/{obj['metadata']['name']}",
                                                                         "ownerWorkload": owner_workload}})

    async def _lingering_gone(self, action: framework.JobStopped) -> bool:
        """None of the Pods ``action.lingering`` selects may still run (``owners.pod_may_run``): listed by
        each selector in the job's namespace (the chart's read-only Pods grant). A list that fails, or
        that RBAC refuses, counts as "may run": the quota stays held and the key is tried again."""
        now = self.now()
        for selector in action.lingering:
            listed = await self.kube.list(r.POD, labelSelector=selector,
                                          fieldSelector=f"metadata.namespace={action.namespace}")
            for pod in listed.get("items") or []:
                if owner_index.pod_may_run(pod, now, parse_time(pod["metadata"].get("deletionTimestamp"))):
                    return False
        return True

    def _warn(self, action: framework.Warn) -> None:
        meta = action.obj.get("metadata") or {}
        key = f"{action.obj.get('kind')}/{meta.get('namespace')}/{meta.get('name')}/{meta.get('uid')}"
        if self.recorder is None or self.warned.get(key) == action.message:
            return
        self.warned[key] = action.message
        self.recorder.emit(dict(action.obj), action.reason, action.message, "Warning")

    async def execute(self, action: framework.Action) -> None:
        if isinstance(action, framework.Note):
            (log.warning if action.warning else log.info)(action.message, extra={"fields": dict(action.fields)})
        elif isinstance(action, framework.Warn):
            self._warn(action)
        elif isinstance(action, framework.Event):
            if self.recorder is not None:
                self.recorder.emit({"apiVersion": action.api_version, "kind": action.kind, "metadata": {
                    "name": action.name, "namespace": action.namespace, "uid": action.uid}},
                    action.reason, action.message)
        elif isinstance(action, framework.JobStopped):
            if action.lingering and not await self._lingering_gone(action):
                raise PodsLinger(f"{action.namespace}/{action.name}")
            if self.stopped is not None:
                self.stopped(f"{action.namespace}/{action.name}")
            if isinstance(self.integration, ObjectKeys):
                self.integration.released(f"{action.namespace}/{action.name}")
        elif isinstance(action, framework.Hold):
            if self.hold is not None:
                self.hold(f"{action.namespace}/{action.name}", action.held, action.message)
        elif isinstance(action, framework.CreateWorkload):
            await self._create_workload(action)
        elif isinstance(action, framework.SetPriority):
            priority, ref = self._priority(action.ref)
            if priority is None:  # the class is not there (yet): the key comes back with backoff
                raise LookupError(f"{(ref or {}).get('kind')} {(ref or {}).get('name')!r} not found")
            # the uid makes the patch fail on a successor of the same name (the API server checks it)
            body = {"metadata": {"uid": action.uid} if action.uid else {},
                    "spec": {"priorityClassRef": ref, "priority": priority}}
            await self.kube.merge_patch(r.WORKLOAD, action.name, body, action.namespace)
            log.info("workload priority updated", extra={"fields": {
                "workload": f"{action.namespace}/{action.name}", "priority": str(priority),
                "class": (ref or {}).get("name", "")}})
        elif isinstance(action, framework.WorkloadConditions):
            conditions = self._conditions(action)
            await self.kube.apply(r.WORKLOAD, _workload_status(action.namespace, action.name, {"conditions": conditions},
                                                               action.uid), manager=action.manager or MANAGER,
                                  subresource="status")
        elif isinstance(action, framework.ReclaimablePods):
            # under upstream's own field manager, so the admission side's status writes neither own nor drop it
            status = {"reclaimablePods": [{"name": n, "count": c} for n, c in sorted(action.pods.items())]}
            await self.kube.apply(r.WORKLOAD, _workload_status(action.namespace, action.name, status, action.uid),
                                  manager=RECLAIMABLE_PODS_MANAGER, subresource="status")
            log.info("reclaimable pods", extra={"fields": {
                "workload": f"{action.namespace}/{action.name}", "reclaimablePods": ",".join(
                    f"{n}={c}" for n, c in sorted(action.pods.items())) or "none"}})
        elif isinstance(action, framework.Patch):
            res = RESOURCES[action.kind]
            try:
                if action.json:
                    await self.kube.json_patch(res, action.name, action.body, action.namespace, action.subresource)
                else:
                    await self.kube.merge_patch(res, action.name, action.body, action.namespace, action.subresource)
            except ApiError as exc:
                if not (action.missing_ok and exc.status == 404):
                    raise
        elif isinstance(action, framework.Replace):
            res = RESOURCES[action.kind]
            if action.obj is not None:
                await self.kube.replace(res, action.obj)
            else:
                assert action.change is not None
                fresh = await self.kube.get(res, action.name, action.namespace)
                await self.kube.replace(res, action.change(fresh))
        elif isinstance(action, framework.Delete):
            try:
                await self.kube.delete(RESOURCES[action.kind], action.name, action.namespace)
            except ApiError as exc:
                if exc.status != 404:
                    raise

    def _conditions(self, action: framework.WorkloadConditions) -> list[dict[str, Any]]:
        """The job side's conditions as they are to be: ``action``'s, and the others it wrote before as the
        cached Workload has them (a server-side apply drops what its manager leaves out: writing Finished
        alone would take PodsReady away). A status that does not change keeps its transition time."""
        cached = self.workloads.get(f"{action.namespace}/{action.name}") or {}
        have = {c.get("type"): c for c in (cached.get("status") or {}).get("conditions") or []}
        out: dict[str, dict[str, Any]] = {kind: dict(have[kind]) for kind in JOB_CONDITIONS if kind in have}
        for kind, status, reason, message in action.conditions:
            value = "True" if status else "False"
            since = (have.get(kind) or {}).get("lastTransitionTime") if (have.get(kind) or {}).get("status") == value \
                else None
            out[kind] = {"type": kind, "status": value, "reason": reason, "message": message,
                         "lastTransitionTime": since or rfc3339(self.now())}
        return [{k: c[k] for k in ("type", "status", "reason", "message", "lastTransitionTime") if k in c}
                for c in out.values()]

    def _priority(self, ref: Any) -> tuple[int | None, Any]:
        """A Workload's priority and class reference from the job's choice of class (upstream's
        PrepareWorkloadPriority): the class's value, else the global default PriorityClass's, else 0."""
        resolved = resolve(None, PriorityClassRef.model_validate(ref) if ref else None, self.classes(), from_job=True)
        if not isinstance(resolved, Resolved):
            return None, ref
        if resolved.class_name and not ref:
            ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": resolved.class_name}
        return resolved.priority, ref

    async def _create_workload(self, action: framework.CreateWorkload) -> None:
        manifest = action.manifest
        spec = manifest["spec"]
        priority, ref = self._priority(spec.get("priorityClassRef"))
        if priority is not None:
            spec["priority"] = priority
        if ref is not None:
            spec["priorityClassRef"] = ref
        manifest["metadata"].pop("creationTimestamp", None)
        key = f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}"
        try:
            await self.kube.create(r.WORKLOAD, manifest, manifest["metadata"]["namespace"])
        except ApiError as exc:
            if exc.status != 409:  # already there: the informer will bring it
                raise
            return
        log.info("workload created", extra={"fields": {"workload": key, "for": action.owner}})
        owner = next((o for o in manifest["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
        if self.recorder is not None and owner is not None:
            # upstream's CreatedWorkload, on the job it was made for
            self.recorder.emit({"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"), "metadata": {
                "name": owner.get("name"), "namespace": manifest["metadata"]["namespace"], "uid": owner.get("uid")}},
                CREATED_WORKLOAD, f"Created Workload: {key}")


def _workload_status(namespace: str, name: str, status: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    # the uid names the Workload decided on (a status apply's metadata is not checked by the API server)
    metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata, "status": status}
