"""Kubernetes Events for what the engine decided, with upstream's reasons, written in the background.

`kubectl describe workload` shows them (source `kueue-admission`). Events are best effort, as in
client-go's recorder: a bounded queue, dropped (and counted) rather than slowing admission down.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from datetime import UTC, datetime
from typing import Any

from pykueue.kube import resources as r
from pykueue.kube.client import Kube

log = logging.getLogger("pykueue.events")
SOURCE = "kueue-admission"
QUEUE_LIMIT = 10_000


class Recorder:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_LIMIT)
        self.dropped = 0

    def emit(self, obj: dict[str, Any] | None, reason: str, message: str, kind: str = "Normal") -> None:
        if obj is None:
            return
        meta = obj["metadata"]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{secrets.token_hex(8)}", "namespace": meta.get("namespace", "default")},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": SOURCE},
            "reportingComponent": SOURCE,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        while True:
            event = await self.queue.get()
            try:
                await self.kube.create(r.CORE_EVENT, event, event["metadata"]["namespace"])
            except Exception as exc:  # noqa: BLE001 - events are best effort
                log.debug("event %s not written: %s", event["reason"], exc)
