"""``spec.managedBy`` defaulting for MultiKueue (upstream's ApplyDefaultForManagedBy): a job created in
a LocalQueue whose ClusterQueue has an AdmissionCheck of the MultiKueue controller is handed to it, so
no job controller runs it on the manager and MultiKueue may dispatch it to a worker. Only a job with no
``managedBy``, or its kind's own controller there, is changed (``jobs.hooks.managed_by_ops``, whose
``dispatches`` this module answers).

The webhook reads three caches for it: LocalQueues (shared with LocalQueueDefaulting), ClusterQueues
and AdmissionChecks, each one watch."""

from __future__ import annotations

from typing import Any

from pykueue.controller.webhooks.default_queues import Watched
from pykueue.engine.multikueue import CONTROLLER_NAME
from pykueue.kube.client import Kube
from pykueue.kube.informer import Informer
from pykueue.kube.resources import ADMISSION_CHECK, CLUSTER_QUEUE


def queue_dispatches(local_queues: dict[str, dict[str, Any]], cluster_queues: dict[str, dict[str, Any]],
                     checks: dict[str, dict[str, Any]], namespace: str, queue: str) -> bool:
    """Whether the LocalQueue ``namespace/queue`` feeds a ClusterQueue with a MultiKueue check (one
    that exists; its Active condition does not matter, as upstream's cache lists it either way)."""
    lq = local_queues.get(f"{namespace}/{queue}")
    cq = cluster_queues.get(str(((lq or {}).get("spec") or {}).get("clusterQueue") or ""))
    strategy = ((cq or {}).get("spec") or {}).get("admissionChecksStrategy") or {}
    for entry in strategy.get("admissionChecks") or []:
        check = checks.get(str((entry or {}).get("name") or ""))
        if check is not None and (check.get("spec") or {}).get("controllerName") == CONTROLLER_NAME:
            return True
    return False


class MultiKueueQueues:
    """The caches ``dispatches`` reads: the LocalQueues' informer it is given, and its own watches of
    ClusterQueues and AdmissionChecks."""

    def __init__(self, kube: Kube, local_queues: Informer) -> None:
        self.local_queues = local_queues
        self.cluster_queues = Watched(kube, CLUSTER_QUEUE)
        self.checks = Watched(kube, ADMISSION_CHECK)

    async def start(self) -> None:
        for cache in (self.cluster_queues, self.checks):
            await cache.start()

    async def stop(self) -> None:
        for cache in (self.cluster_queues, self.checks):
            await cache.stop()

    def dispatches(self, namespace: str, queue: str) -> bool:
        return queue_dispatches(self.local_queues.store, self.cluster_queues.informer.store,
                                self.checks.informer.store, namespace, queue)
