"""The queue objects (Namespaces, ResourceFlavors, AdmissionChecks, Cohorts, ClusterQueues,
LocalQueues), reconciled level-triggered: for a key, read the informer's cache and make the engine
agree with it. Calling ``sync`` again for the same object changes nothing, so a failed or repeated pass
is harmless and a periodic resync catches anything missed.

Upstream's lifecycle: ClusterQueues, ResourceFlavors and AdmissionChecks carry the finalizer
``kueue.x-k8s.io/resource-in-use``. A deleted ClusterQueue stays terminating, admits nothing and keeps
its admitted workloads' usage counted until they release it; a deleted flavor or check stays while a
ClusterQueue names it. An object that bypassed validation is reported on itself (a Warning event, and
for a ClusterQueue an ``Active=False`` condition with the message ``pykueue validate`` prints), never
ignored: an invalid ClusterQueue admits nothing but its admitted workloads still count against it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pykueue.controller.core import translate
from pykueue.controller.core.events import Recorder
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.jobs.framework.workload import RESOURCE_IN_USE_FINALIZER
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer
from pykueue.kube.workqueue import WorkQueue

log = logging.getLogger("pykueue.controller")

KINDS = (r.NAMESPACE, r.RESOURCE_FLAVOR, r.ADMISSION_CHECK, r.COHORT, r.CLUSTER_QUEUE, r.LOCAL_QUEUE)
GUARDED = {r.CLUSTER_QUEUE.kind: r.CLUSTER_QUEUE, r.RESOURCE_FLAVOR.kind: r.RESOURCE_FLAVOR,
           r.ADMISSION_CHECK.kind: r.ADMISSION_CHECK}
INVALID = "InvalidSpec"  # the Warning event's reason and the ClusterQueue's Active=False reason


def deleting(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def raw_cohort(obj: dict[str, Any]) -> str | None:
    """The cohort an invalid ClusterQueue names, read as far as it can be (v1beta2 and v1beta1)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    value = spec.get("cohortName", spec.get("cohort"))
    return value if isinstance(value, str) and value else None


def _raw_cluster_queue(obj: dict[str, Any]) -> str:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    value = spec.get("clusterQueue")
    return value if isinstance(value, str) else ""


class QueueObjects:
    """Engine ingest for the queue kinds, and their finalizers."""

    def __init__(self, engine: Engine, kube: Kube, recorder: Recorder, informers: dict[str, Informer],
                 changed: Callable[[], None]) -> None:
        self.engine = engine
        self.kube = kube
        self.recorder = recorder
        self.informers = informers
        self.changed = changed  # queue statuses and a scheduling pass are due
        self.seen: dict[tuple[str, str], tuple[Any, bool]] = {}  # (kind, key) -> (clean object, deleting) last synced
        self.problems: dict[tuple[str, str], str] = {}  # invalid objects: what validation says
        self.finalizers = WorkQueue()  # "Kind/key" whose finalizer may need adding or removing

    def sync(self, res: r.Resource, key: str) -> None:
        """Make the engine agree with the cache's copy of ``key`` (absent: deleted)."""
        obj = self.informers[res.plural].get(key)
        ident = (res.kind, key)
        if obj is None:
            self.seen.pop(ident, None)
            self.problems.pop(ident, None)
            self._delete(res.kind, key)
            self.changed()
            return
        state = (translate.clean(obj), deleting(obj))
        if self.seen.get(ident) != state:
            self._apply(res.kind, key, obj)
            self.seen[ident] = state
            self.changed()
        if res.kind in GUARDED:
            self.finalizers.add(f"{res.kind}/{key}")

    def resync(self) -> None:
        """Every cached object once more (cheap: an unchanged one is skipped), and every terminating
        one's finalizer: its last workload may have released its quota meanwhile."""
        for res in KINDS:
            inf = self.informers.get(res.plural)
            if inf is None:
                continue
            for key in list(inf.store):
                self.sync(res, key)
            for key in [k for (kind, k) in self.seen if kind == res.kind and k not in inf.store]:
                self.sync(res, key)

    def recheck_terminating(self) -> None:
        for (kind, key), (_, is_deleting) in self.seen.items():
            if is_deleting and kind in GUARDED:
                self.finalizers.add(f"{kind}/{key}")

    def problem(self, kind: str, key: str) -> str | None:
        return self.problems.get((kind, key))

    # ---- engine side ------------------------------------------------------------------------------

    def _apply(self, kind: str, key: str, obj: dict[str, Any]) -> None:
        engine, now = self.engine, 0
        converted, problems = translate.queue_object(obj)
        if problems or converted is None:
            message = "; ".join(problems) or "the object could not be read"
            if self.problems.get((kind, key)) != message:
                log.warning("invalid object", extra={"fields": {"kind": kind, "name": key, "problems": message}})
                self.recorder.emit(obj, INVALID, message[:1024], "Warning")
            self.problems[(kind, key)] = message
            if kind == "ClusterQueue":
                engine.invalidate_cluster_queue(key, raw_cohort(obj), message)
            elif kind == "LocalQueue":  # it exists: its workloads are told why it admits nothing
                namespace, name = key.split("/", 1)
                engine.apply_local_queue(model.LocalQueue(namespace, name, _raw_cluster_queue(obj), invalid=message))
            else:
                self._delete(kind, key)  # a flavor or check that cannot be read is missing to its queues
        else:
            self.problems.pop((kind, key), None)
            if isinstance(converted, model.ClusterQueue):
                engine.apply_cluster_queue(converted, now)
            elif isinstance(converted, model.LocalQueue):
                engine.apply_local_queue(converted, now)
            elif isinstance(converted, model.Cohort):
                engine.apply_cohort(converted)
            elif isinstance(converted, model.ResourceFlavor):
                engine.apply_resource_flavor(converted)
            elif isinstance(converted, model.AdmissionCheck):
                engine.apply_admission_check(converted)
            elif isinstance(converted, model.Namespace):
                engine.apply_namespace(converted)
        if kind == "ClusterQueue" and deleting(obj):
            engine.delete_cluster_queue(key)  # terminating: kept while workloads hold quota in it

    def _delete(self, kind: str, key: str) -> None:
        engine = self.engine
        {
            "Namespace": engine.delete_namespace, "ResourceFlavor": engine.delete_resource_flavor,
            "AdmissionCheck": engine.delete_admission_check, "Cohort": engine.delete_cohort,
            "ClusterQueue": engine.delete_cluster_queue, "LocalQueue": engine.delete_local_queue,
        }[kind](key)

    # ---- finalizers -------------------------------------------------------------------------------

    def in_use(self, kind: str, key: str) -> bool:
        if kind == "ClusterQueue":
            return self.engine.cluster_queue_in_use(key)
        if kind == "ResourceFlavor":
            return self.engine.resource_flavor_in_use(key)
        return self.engine.admission_check_in_use(key)

    async def reconcile_finalizer(self, item: str) -> None:
        """Add the resource-in-use finalizer to a live object; take it off a deleted one no longer in
        use. A conflict or an outage raises: the work queue brings the key back."""
        kind, key = item.split("/", 1)
        res = GUARDED[kind]
        obj = self.informers[res.plural].get(key)
        if obj is None:
            return
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        has = RESOURCE_IN_USE_FINALIZER in finalizers
        if deleting(obj):
            if not has or self.in_use(kind, key):
                return
            finalizers.remove(RESOURCE_IN_USE_FINALIZER)
        elif has:
            return
        else:
            finalizers.append(RESOURCE_IN_USE_FINALIZER)
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        try:
            await self.kube.merge_patch(res, key, patch)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise

    def finalizer_error(self, item: str, exc: Exception) -> None:
        level = logging.DEBUG if isinstance(exc, ApiError) and exc.status == 409 else logging.WARNING
        log.log(level, "finalizer not updated; retrying", extra={"fields": {"object": item, "error": str(exc)}})
