"""The LeaderWorkerSet side of the controller (upstream's leaderworkerset and leaderworkerset_pod
reconcilers): keeps one prebuilt Workload per group of a LeaderWorkerSet and its Pods' group labels in
step with it.

What to write is decided by the pure ``pykueue.jobs.leaderworkerset.workload.reconcile``; this finds the
objects behind a key in the informers' caches (the LWS, the Workloads it owns, its managed Pods) and
carries the writes out through the job reconciler, which resolves a new Workload's priority. Each
group's Pods then run as a pod group (``controller.jobs.PodKeys``), released when its Workload is
admitted.
"""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs import JobReconciler, Store
from pykueue.jobs.framework import GenericJob
from pykueue.jobs.leaderworkerset import workload as lws


class LeaderWorkerSetKeys:
    """LeaderWorkerSets: the key is the LWS's; a Workload names it through its owner, a Pod through
    its set-name label."""

    label_keys: tuple[str, ...] = ()

    def __init__(self, sets: Store, pods: Store) -> None:
        self.sets = sets
        self.pods = pods
        self.running = False  # its informer started: Pod events are queued from then on, LWSs or none

    def load(self, key: str) -> GenericJob | None:
        return None  # the LWS is no GenericJob: each group's Pods are (one pod group)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        meta = workload["metadata"]
        return [f"{meta['namespace']}/{o['name']}" for o in meta.get("ownerReferences") or []
                if o.get("kind") == lws.KIND and o.get("apiVersion") == lws.API_VERSION]

    def key_for_pod(self, pod: dict[str, Any]) -> str | None:
        meta = pod["metadata"]
        if (meta.get("annotations") or {}).get(lws.SUSPENDED_BY_PARENT) != lws.FRAMEWORK:
            return None
        name = (meta.get("labels") or {}).get(lws.SET_NAME_LABEL)
        return None if not name else f"{meta.get('namespace')}/{name}"


class LeaderWorkerSetReconciler:
    """Reconciles one LWS key: the pure rule decides, the job reconciler writes."""

    def __init__(self, keys: LeaderWorkerSetKeys, writer: JobReconciler) -> None:
        self.keys = keys
        self.writer = writer

    async def reconcile(self, key: str) -> None:
        obj = self.keys.sets.get(key)
        if obj is None:
            # gone: the garbage collector takes the Workloads it owned; its ending Pods lose the finalizer
            namespace, name = key.split("/", 1)
            for action in lws.reconcile_gone(namespace, name, self.keys.pods.values()):
                await self.writer.execute(action)
            return
        namespace = obj["metadata"].get("namespace")
        owned = lws.owned_by(obj, (w for w in self.writer.workloads.values()
                                   if w["metadata"].get("namespace") == namespace))
        pods = [p for p in self.keys.pods.values() if p["metadata"].get("namespace") == namespace]
        for action in lws.reconcile(obj, owned, pods, self.keys.label_keys):
            await self.writer.execute(action)
