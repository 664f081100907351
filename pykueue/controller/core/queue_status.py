"""ClusterQueue and LocalQueue statuses (counts, usage, the Active condition, fair share), written
from the engine's read model: coalesced over a second, a few at a time, only when they changed.

A status is remembered by (kind, key) and the object's uid, so a re-created object (a new uid) is
written again even when its status reads the same, and a Workload key never collides with a queue's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pykueue.controller.core import views
from pykueue.controller.core.workload_status import (
    MANAGER,
    comparable,
    conditions_by_type,
    rfc3339,
    transition_time,
)
from pykueue.controller.runtime.parallel import in_parallel
from pykueue.controller.runtime.supervise import retry_delay
from pykueue.engine.engine import Engine
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer

log = logging.getLogger("pykueue.controller")

QUEUE_STATUS_SECONDS = 1.0  # queue statuses: at most one write per queue per second
QUEUE_WRITE_CONCURRENCY = 4  # and a few at a time: 2,000 queues at 16 took a quarter of the API server

Written = tuple[str | None, dict[str, Any]]  # (uid, the status without timestamps)


class QueueStatusWriter:
    def __init__(self, engine: Engine, kube: Kube, informers: dict[str, Informer],
                 clock: Callable[[], float]) -> None:
        self.engine = engine
        self.kube = kube
        self.informers = informers
        self.clock = clock
        self.dirty = asyncio.Event()
        self.written: dict[tuple[str, str], Written] = {}

    async def run(self) -> None:
        """Coalesce, write, and on any failed write back off and write again: every pass recomputes
        every status from the engine, so the flag `dirty` is all the work there is to keep. A pass
        that raises (a bug, not the API server) leaves it set and fails the loop, for the supervisor
        to restart and count."""
        failures = 0
        while True:
            await self.dirty.wait()
            await asyncio.sleep(QUEUE_STATUS_SECONDS)  # coalesce a burst of changes into one write per queue
            self.dirty.clear()
            try:
                failed = await self.write_all()
            except BaseException:
                self.dirty.set()  # the pass did not finish: the next run of this loop does it again
                raise
            if not failed:
                failures = 0
                continue
            delay = retry_delay(failures)
            failures += 1
            log.warning("queue status not written; retrying", extra={"fields": {
                "queues": len(failed), "error": failed[0], "failures": failures, "retryIn": f"{delay:g}s"}})
            await asyncio.sleep(delay)
            self.dirty.set()

    async def write_all(self) -> list[str]:
        """Write every queue whose status changed; return the errors of those that failed. A status the server
        refuses is retried as any failure is (with backoff), and one that lands or whose object is
        gone (404) is done; the others go on meanwhile."""
        writes: list[tuple[r.Resource, dict[str, Any], tuple[str, str], Written]] = []
        seen: set[tuple[str, str]] = set()  # the queues written or checked this pass: the others leave `written`
        for name in self.engine.cluster_queue_names():
            seen.add(("ClusterQueue", name))
            obj = self.informers["clusterqueues"].get(name)
            status = views.cluster_queue_status(self.engine, name)
            if status is None or obj is None:
                continue  # a queue the API no longer has, held for the workloads it admitted
            write = self._write(r.CLUSTER_QUEUE, ("ClusterQueue", name), {"name": name}, obj, status)
            if write is not None:
                writes.append(write)
        for name, status in views.cohort_statuses(self.engine).items():
            seen.add(("Cohort", name))
            obj = self.informers["cohorts"].get(name)
            if obj is None:
                continue  # a cohort only named by its ClusterQueues has no object to carry a status
            write = self._write(r.COHORT, ("Cohort", name), {"name": name}, obj, status)
            if write is not None:
                writes.append(write)
        for key, status in views.local_queue_statuses(self.engine).items():
            seen.add(("LocalQueue", key))
            obj = self.informers["localqueues"].get(key)
            if obj is None:
                continue
            namespace, name = key.split("/", 1)
            write = self._write(r.LOCAL_QUEUE, ("LocalQueue", key), {"name": name, "namespace": namespace}, obj,
                                status)
            if write is not None:
                writes.append(write)
        failed: list[str] = []

        async def apply(write: tuple[r.Resource, dict[str, Any], tuple[str, str], Written]) -> None:
            if (error := await self._apply(*write)) is not None:
                failed.append(error)

        await in_parallel(writes, apply, limit=QUEUE_WRITE_CONCURRENCY)
        for gone in self.written.keys() - seen:  # queues the engine no longer has: kept, they would only grow
            del self.written[gone]
        return failed

    def _write(self, res: r.Resource, key: tuple[str, str], meta: dict[str, str], obj: dict[str, Any],
               status: dict[str, Any]) -> tuple[r.Resource, dict[str, Any], tuple[str, str], Written] | None:
        stamp = (obj["metadata"].get("uid"), comparable(status))
        if self.written.get(key) == stamp:
            return None
        body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta,
                "status": _stamped(status, obj, self.clock())}
        return res, body, key, stamp

    async def _apply(self, res: r.Resource, body: dict[str, Any], key: tuple[str, str], stamp: Written) -> str | None:
        """One status; the error when it did not land and must be written again."""
        try:
            await self.kube.apply(res, body, manager=MANAGER, subresource="status")
        except ApiError as exc:
            if exc.status == 404:
                return None  # the object is gone: nothing to write
            log.log(logging.DEBUG if exc.status >= 500 or exc.status in (408, 429) else logging.WARNING,
                    "queue status refused", extra={"fields": {"queue": "/".join(key), "error": str(exc)}})
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - transport errors: written again after the backoff
            return str(exc) or repr(exc)
        self.written[key] = stamp
        return None


def _stamped(status: dict[str, Any], obj: dict[str, Any] | None, now: float) -> dict[str, Any]:
    """Conditions keep their lastTransitionTime while their status stays the same."""
    old, stamp = conditions_by_type(obj), rfc3339(now)
    if "conditions" not in status:
        return status
    conditions = [{**c, "lastTransitionTime": transition_time(old, c["type"], c["status"], stamp)}
                  for c in status["conditions"]]
    return {**status, "conditions": conditions}
