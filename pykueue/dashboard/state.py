"""The dashboard's live state: one list-then-watch per kind, and a hub that tells every open page.

One ``Feed`` per process watches the API server (the shared informers of ``pykueue.kube``); each change
bumps the hub's version, coalesced so that a burst of changes (a ``kubectl apply`` of a hundred Jobs)
is one update. Pages subscribe to the hub and re-render when it moves; nothing polls the API server,
and a hundred open pages cost one watch per kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from pykueue.api.loader import INTEGRATIONS
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer, key_of

log = logging.getLogger("pykueue.dashboard")

# What the pages read: the queue objects, priority classes, Workloads, the Jobs behind them and events.
WATCHED = (
    r.NAMESPACE, r.RESOURCE_FLAVOR, r.ADMISSION_CHECK, r.COHORT, r.CLUSTER_QUEUE, r.LOCAL_QUEUE,
    r.PRIORITY_CLASS, r.WORKLOAD_PRIORITY_CLASS, r.WORKLOAD, r.JOB, r.CORE_EVENT,
)
COALESCE_SECONDS = 0.25
# The events kept: those about Kueue's objects and the ones its integrations queue (a workload's page
# shows its own and its owners'); the cluster's other events (nodes, deployments, every Pod's pulls
# and schedulings) are dropped as they arrive, so the cache grows with Kueue's objects only.
EVENT_KINDS = frozenset(("Workload", "ClusterQueue", "LocalQueue", "Cohort", *INTEGRATIONS))


def is_kept(event: dict[str, Any]) -> bool:
    """An event about one of ``EVENT_KINDS`` (``involvedObject``; ``regarding`` in events.k8s.io's form)."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return isinstance(involved, dict) and involved.get("kind") in EVENT_KINDS


class Hub:
    """A version number that moves when the state changes, and the pages waiting for it to move.

    Each subscriber holds a queue of at most one pending version: a slow page skips versions it has
    not read (it renders the newest state anyway) instead of growing a backlog."""

    def __init__(self, coalesce: float = COALESCE_SECONDS) -> None:
        self.version = 0
        self.coalesce = coalesce
        self._subscribers: set[asyncio.Queue[int]] = set()
        self._scheduled: asyncio.TimerHandle | None = None

    def subscribe(self) -> asyncio.Queue[int]:
        queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[int]) -> None:
        self._subscribers.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def changed(self) -> None:
        """Something changed: publish once the burst it belongs to is over."""
        if self._scheduled is None:
            self._scheduled = asyncio.get_running_loop().call_later(self.coalesce, self.publish)

    def publish(self) -> None:
        self._scheduled = None
        self.version += 1
        for queue in self._subscribers:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(self.version)


class Feed:
    """The informers of every watched kind, their caches read as ``Objects``."""

    def __init__(self, kube: Kube, hub: Hub) -> None:
        self.kube = kube
        self.hub = hub
        self.informers = {res.plural: Informer(kube, res, self._event if res is r.CORE_EVENT else self._changed)
                          for res in WATCHED}
        self.unreadable: dict[str, str] = {}  # kinds this identity may not list, or the server does not serve
        self._tasks: list[asyncio.Task[None]] = []

    def _changed(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self.hub.changed()

    def _event(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """An event about anything else leaves the informer's cache as soon as it is put there (a
        relist or a later change puts it back only to see it dropped again)."""
        if new is not None and not is_kept(new):
            self.informers[r.CORE_EVENT.plural].store.pop(key_of(new), None)
            return
        self.hub.changed()

    @property
    def objects(self) -> Mapping[str, Mapping[str, dict[str, Any]]]:
        return {plural: inf.store for plural, inf in self.informers.items()}

    def begin(self) -> None:
        """Start every watch (each lists, then watches, and keeps at it through failures)."""
        self._tasks = [asyncio.create_task(self._run(plural, inf), name=f"dashboard-{plural}")
                       for plural, inf in self.informers.items()]

    async def _run(self, plural: str, inf: Informer) -> None:
        """One kind's watch, unless the first list is refused for good (the controller's chart role
        may not list events, an older install may not serve Cohorts): then one warning, and the pages
        go without that kind rather than retrying forever."""
        try:
            await self.kube.list(inf.resource, limit=1)
        except ApiError as exc:
            if exc.status in (401, 403, 404):
                self.unreadable[plural] = f"{exc.status} {exc.reason}".strip()
                log.warning("cannot list; the dashboard goes without them", extra={"fields": {
                    "resource": plural, "status": exc.status}})
                inf.synced.set()
                self.hub.changed()
                return
        except Exception:  # noqa: BLE001, S110 - anything else is the informer's to retry
            pass
        await inf.run()

    async def start(self, timeout: float = 60.0) -> None:
        """Start every watch and wait (at most ``timeout``) until each has listed once."""
        self.begin()
        waits = [asyncio.create_task(inf.synced.wait()) for inf in self.informers.values()]
        _, pending = await asyncio.wait(waits, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            missing = [p for p, inf in self.informers.items() if not inf.synced.is_set()]
            log.warning("not every watch has listed yet; the pages fill in as they do",
                        extra={"fields": {"resources": ",".join(missing)}})

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    async def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One Pod, read when a workload's page asks (Pods are not watched), None when not readable."""
        try:
            return await self.kube.get(r.POD, name, namespace)
        except ApiError:
            return None

    @property
    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.informers.values())
