"""Which namespaces have a LocalQueue named ``default``: what upstream's LocalQueueDefaulting (locked on
in v0.18) asks of the job webhooks. A Job created there without a queue label is queued in
``default``, and that label may not be dropped later.

Every replica serves the webhooks, leader or not, so each keeps this small cache itself: one watch of
LocalQueues, of which only the keys are read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from pykueue.kube.client import Kube
from pykueue.kube.informer import Informer
from pykueue.kube.resources import LOCAL_QUEUE

log = logging.getLogger("pykueue.webhooks")
DEFAULT_QUEUE = "default"  # upstream's constants.DefaultLocalQueueName
SYNC_SECONDS = 10.0  # how long the webhook's start waits for the first list


class DefaultQueues:
    """A watch of LocalQueues; ``exists(namespace)`` once it has listed them (False before)."""

    def __init__(self, kube: Kube) -> None:
        self.informer = Informer(kube, LOCAL_QUEUE, lambda _kind, _old, _new: None)
        self._task: asyncio.Task | None = None

    def exists(self, namespace: str) -> bool:
        return f"{namespace}/{DEFAULT_QUEUE}" in self.informer.store

    async def start(self) -> None:
        self._task = asyncio.create_task(self.informer.run(), name="default-local-queues")
        try:
            await asyncio.wait_for(self.informer.synced.wait(), SYNC_SECONDS)
        except TimeoutError:
            log.warning("LocalQueues not listed yet: no Job is queued in a default LocalQueue until they are",
                        extra={"fields": {"waited": f"{SYNC_SECONDS:g}s"}})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
