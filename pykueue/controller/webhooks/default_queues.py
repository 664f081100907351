"""The small caches the job webhooks read: which namespaces have a LocalQueue named ``default`` (what
upstream's LocalQueueDefaulting, locked on in v0.18, asks), and each Namespace's labels (what
``managedJobsNamespaceSelector`` is matched against).

A job created without a queue label where a ``default`` LocalQueue exists is queued in it, and that label
may not be dropped later. Every replica serves the webhooks, leader or not, so each keeps these caches
itself: one watch of LocalQueues (only their keys are read) and one of Namespaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pykueue.jobs.hooks import DEFAULT_QUEUE
from pykueue.kube.client import Kube
from pykueue.kube.informer import Informer
from pykueue.kube.resources import LOCAL_QUEUE, NAMESPACE, Resource

log = logging.getLogger("pykueue.webhooks")
SYNC_SECONDS = 10.0  # how long the webhook's start waits for the first list


class Watched:
    """One watch whose store the webhooks read; empty until it has listed the objects."""

    what = ""  # for the log line when the first list is late

    def __init__(self, kube: Kube, resource: Resource) -> None:
        self.informer = Informer(kube, resource, lambda _kind, _old, _new: None)
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self.informer.run(), name=f"webhook-{self.informer.resource.plural}")
        try:
            await asyncio.wait_for(self.informer.synced.wait(), SYNC_SECONDS)
        except TimeoutError:
            log.warning("not listed yet", extra={"fields": {
                "resource": self.informer.resource.plural, "meanwhile": self.what, "waited": f"{SYNC_SECONDS:g}s"}})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class DefaultQueues(Watched):
    """``exists(namespace)``: a LocalQueue named ``default`` is there."""

    what = "no job is queued in a default LocalQueue until they are"

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, LOCAL_QUEUE)

    def exists(self, namespace: str) -> bool:
        return f"{namespace}/{DEFAULT_QUEUE}" in self.informer.store


class Namespaces(Watched):
    """``labels(name)``: a Namespace's labels, None while it has not been seen."""

    what = "namespaces are read by their name label alone until they are"

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, NAMESPACE)

    def labels(self, name: str) -> dict[str, Any] | None:
        obj = self.informer.store.get(name)
        return None if obj is None else (obj.get("metadata") or {}).get("labels") or {}
