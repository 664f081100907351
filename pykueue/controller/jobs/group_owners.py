"""The controller's side of the kinds whose Pods run as pod groups and that keep those groups'
Workloads themselves (upstream's statefulset and leaderworkerset reconcilers, with their Pod
reconcilers): one informer and work queue per such kind, keyed by the object's ``namespace/name``.

What to write is decided by the kind's pure rules, its ``Integration.groups`` record (``GroupOwner``);
this names no kind: it finds the objects behind a key in the informers' caches (the object, its
namespace's managed Pods, the cached Workloads) and carries the writes out through the job reconciler,
which resolves a new Workload's priority. The Pods themselves run as pod groups
(``controller.jobs.reconciler.PodKeys``).
"""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs.reconciler import JobReconciler, Store
from pykueue.jobs.framework import GenericJob
from pykueue.jobs.integration import GroupOwner, Integration


class GroupOwnerKeys:
    """One such kind's keys: the object's; a Workload names it through its owner reference, a Pod
    through the kind's ``key_for_pod``."""

    def __init__(self, integration: Integration, sets: Store, pods: Store) -> None:
        assert integration.groups is not None
        self.integration = integration
        self.rules: GroupOwner = integration.groups
        self.sets = sets
        self.pods = pods
        self.label_keys: tuple[str, ...] = ()
        self.running = False  # its informer started: Pod events are queued from then on, objects or none

    def load(self, key: str) -> GenericJob | None:
        return None  # the object is no GenericJob: its groups' Pods are (one pod group each)

    def keys_for_workload(self, workload: dict[str, Any]) -> list[str]:
        meta = workload["metadata"]
        res = self.integration.resource
        return [f"{meta['namespace']}/{o['name']}" for o in meta.get("ownerReferences") or []
                if o.get("kind") == res.kind and o.get("apiVersion") == res.api_version]

    def key_for_pod(self, pod: dict[str, Any]) -> str | None:
        return self.rules.key_for_pod(pod)


class GroupOwnerReconciler:
    """Reconciles one key of such a kind: the kind's pure rule decides, the job reconciler writes."""

    def __init__(self, keys: GroupOwnerKeys, writer: JobReconciler) -> None:
        self.keys = keys
        self.writer = writer

    async def reconcile(self, key: str) -> None:
        obj = self.keys.sets.get(key)
        if obj is None:
            # gone: the garbage collector takes the Workloads it owned; its ending Pods lose the finalizer
            namespace, name = key.split("/", 1)
            actions = self.keys.rules.reconcile_gone(namespace, name, self.keys.pods.values())
        else:
            namespace = obj["metadata"].get("namespace")
            pods = [p for p in self.keys.pods.values() if p["metadata"].get("namespace") == namespace]
            actions = self.keys.rules.reconcile(obj, self.writer.workloads, pods, self.keys.label_keys)
        for action in actions:
            await self.writer.execute(action)
