"""The StatefulSet side of the controller (upstream's statefulset reconciler): keeps a StatefulSet's
Workload, named with its UID and made from the StatefulSet, and its Pods' group labels in step with it.

What to write is decided by the pure ``pykueue.jobs.statefulset.workload.reconcile``; this finds the objects
behind a key in the informers' caches (the StatefulSet, the managed Pods it controls, its Workload) and
carries the writes out through the job reconciler, which resolves a new Workload's priority. The Pods
themselves run as a pod group (``controller.jobs.PodKeys``).
"""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs import JobReconciler, Store
from pykueue.jobs.framework import GenericJob
from pykueue.jobs.statefulset import workload as statefulset


class StatefulSetKeys:
    """StatefulSets: the key is the StatefulSet's; a Pod or Workload names it through its owner."""

    def __init__(self, sets: Store, pods: Store) -> None:
        self.sets = sets
        self.pods = pods
        self.running = False  # its informer started: Pod events are queued from then on, StatefulSets or none

    def load(self, key: str) -> GenericJob | None:
        return None  # the StatefulSet is no GenericJob: its Pods are (one pod group)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        meta = workload["metadata"]
        return [f"{meta['namespace']}/{o['name']}" for o in meta.get("ownerReferences") or []
                if o.get("kind") == statefulset.KIND and o.get("apiVersion") == statefulset.API_VERSION]

    def key_for_pod(self, pod: dict[str, Any]) -> str | None:
        ref = statefulset.owner(pod)
        return None if ref is None else f"{pod['metadata']['namespace']}/{ref['name']}"


class StatefulSetReconciler:
    """Reconciles one StatefulSet key: the pure rule decides, the job reconciler writes."""

    def __init__(self, keys: StatefulSetKeys, writer: JobReconciler) -> None:
        self.keys = keys
        self.writer = writer

    async def reconcile(self, key: str) -> None:
        sts = self.keys.sets.get(key)
        if sts is None:
            # gone: the garbage collector takes the Workload it owned; its ending Pods lose the finalizer
            namespace, name = key.split("/", 1)
            for action in statefulset.reconcile_gone(namespace, name, self.keys.pods.values()):
                await self.writer.execute(action)
            return
        namespace = sts["metadata"].get("namespace")
        pods = statefulset.members(sts, (p for p in self.keys.pods.values() if p["metadata"].get("namespace") == namespace))
        workload = self.writer.workloads.get(f"{namespace}/{statefulset.name_of(sts)}")
        for action in statefulset.reconcile(sts, workload, pods):
            await self.writer.execute(action)
