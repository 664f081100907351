"""The job side of the controller: one reconciler that drives every integration through the job framework.

Like upstream's jobframework reconciler this reads only API objects (the integration's objects and their
Workloads, from the informers' caches), never the engine: the Workload's status is the contract between
the two halves. What to write is decided by the pure ``pykueue.jobs.framework.reconcile``; this module
finds the objects behind a key (``JobKeys``, ``PodKeys``), carries the writes out, and resolves the
priority of a Workload it creates. A write that fails raises, and the work queue brings the key back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from pykueue.api.models.kueue_v1beta2 import PriorityClassRef
from pykueue.api.priority import PriorityClasses, Resolved, resolve
from pykueue.controller.events import Recorder
from pykueue.controller.workload_status import rfc3339
from pykueue.jobs import batch, framework, pods, ray_live
from pykueue.jobs.framework import GenericJob
from pykueue.jobs.job import Job
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube

log = logging.getLogger("pykueue.jobs")
MANAGER = "kueue-job-controller"
RECLAIMABLE_PODS_MANAGER = "kueue-reclaimable-pods"
GROUP_PREFIX = "group:"  # a pod group's key in the work queue: group:<namespace>/<group name>
RESOURCES = {"Job": r.JOB, "Pod": r.POD, "RayCluster": r.RAY_CLUSTER, "RayJob": r.RAY_JOB, "Workload": r.WORKLOAD}
Store = dict[str, dict[str, Any]]
JOB_CONDITIONS = ("PodsReady", "Finished")  # the Workload conditions the job side writes (field manager MANAGER)


class Integration(Protocol):
    """Finds the GenericJob behind a work-queue key, and the keys a Workload's owners stand for."""

    def load(self, key: str) -> GenericJob | None: ...

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]: ...


class JobKeys:
    """batch/v1 Jobs: the key is the Job's."""

    def __init__(self, jobs: Store, manage_without_queue_name: bool, enabled: bool = True) -> None:
        self.jobs = jobs
        self.manage_without_queue_name = manage_without_queue_name
        self.enabled = enabled  # batch/job in integrations.frameworks

    def load(self, key: str) -> GenericJob | None:
        obj = self.jobs.get(key)
        if obj is None or not self.enabled or not (batch.is_managed(obj) or self.manage_without_queue_name):
            return None
        return Job(obj)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        namespace = workload["metadata"]["namespace"]
        return [f"{namespace}/{o['name']}" for o in workload["metadata"].get("ownerReferences") or []
                if o.get("kind") == "Job" and (o.get("apiVersion") or "").startswith("batch/")]


class RayKeys:
    """RayClusters or RayJobs (one ``kind`` each): the key is the object's."""

    def __init__(self, kind: str, objects: Store, manage_without_queue_name: bool) -> None:
        self.kind = kind
        self.objects = objects
        self.manage_without_queue_name = manage_without_queue_name

    def load(self, key: str) -> GenericJob | None:
        obj = self.objects.get(key)
        if obj is None or not ray_live.is_managed(obj, self.manage_without_queue_name):
            return None
        return ray_live.RayObject(obj)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        namespace = workload["metadata"]["namespace"]
        return [f"{namespace}/{o['name']}" for o in workload["metadata"].get("ownerReferences") or []
                if o.get("kind") == self.kind and (o.get("apiVersion") or "").startswith("ray.io/")]


class PodKeys:
    """Pods Kueue gated (the informer sees only those with the managed label): a plain Pod's key is its
    own, a pod group's is ``group:<namespace>/<group>``; ``groups`` indexes a group's members."""

    def __init__(self, pods_store: Store) -> None:
        self.pods = pods_store
        self.groups: dict[str, set[str]] = {}

    def key_for_pod(self, pod: dict[str, Any]) -> str:
        meta = pod["metadata"]
        group = pods.group_name(pod)
        return f"{GROUP_PREFIX}{meta['namespace']}/{group}" if group else f"{meta['namespace']}/{meta['name']}"

    def track(self, pod: dict[str, Any], deleted: bool) -> str:
        """Keep the group index current; the key to reconcile."""
        key = self.key_for_pod(pod)
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

    def load(self, key: str) -> GenericJob | None:
        if key.startswith(GROUP_PREFIX):
            namespace, name = key[len(GROUP_PREFIX):].split("/", 1)
            members = [self.pods[k] for k in sorted(self.groups.get(key, ())) if k in self.pods]
            return pods.PodGroup(namespace, name, members)
        pod = self.pods.get(key)
        if pod is None or (pod["metadata"].get("labels") or {}).get(pods.MANAGED_LABEL) != "true":
            return None
        return pods.Pod(pod)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        meta = workload["metadata"]
        if (meta.get("annotations") or {}).get(pods.IS_GROUP_WORKLOAD) == "true":
            # a group's, even before its Pods own it (a StatefulSet's, made from the StatefulSet)
            return [f"{GROUP_PREFIX}{meta['namespace']}/{meta['name']}"]
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        return [f"{meta['namespace']}/{o['name']}" for o in owners]


class JobReconciler:
    """Reconciles one key of one integration: the framework decides, this carries the writes out."""

    def __init__(self, kube: Kube, integration: Integration, workloads: Store, flavors: Store,
                 classes: Callable[[], PriorityClasses], now: Callable[[], float],
                 stopped: Callable[[str], object] | None = None, recorder: Recorder | None = None,
                 wait_for_pods_ready: bool = False) -> None:
        self.kube = kube
        self.wait_for_pods_ready = wait_for_pods_ready  # PodsReady is written only under waitForPodsReady
        # Warning events on objects that cannot be queued, each once per (object, message): a job is
        # reconciled again and again while it waits, and one event says it all.
        self.recorder = recorder
        self.warned: dict[str, str] = {}
        # Told NAMESPACE/NAME of a Workload whose evicted job no longer runs: the admission side
        # releases its quota (one writer of the admission: the Workload status writer).
        self.stopped = stopped
        self.integration = integration
        self.workloads = workloads
        self.flavors = flavors
        self.classes = classes
        self.now = now

    async def reconcile(self, key: str) -> None:
        job = self.integration.load(key)
        if job is None:
            return
        workload = self.workloads.get(f"{job.namespace}/{job.workload_name()}")
        for action in framework.reconcile(job, workload, self.flavors, wait_for_pods_ready=self.wait_for_pods_ready):
            await self.execute(action)

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
            if self.stopped is not None:
                self.stopped(f"{action.namespace}/{action.name}")
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
        try:
            await self.kube.create(r.WORKLOAD, manifest, manifest["metadata"]["namespace"])
        except ApiError as exc:
            if exc.status != 409:  # already there: the informer will bring it
                raise
        log.info("workload created", extra={"fields": {
            "workload": f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}", "for": action.owner}})


def _workload_status(namespace: str, name: str, status: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    # the uid names the Workload decided on (a status apply's metadata is not checked by the API server)
    metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata, "status": status}
