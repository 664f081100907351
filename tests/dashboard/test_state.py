"""The dashboard's feed and hub without a cluster: a fake API server lists objects and refuses events,
as the controller's chart role refuses them."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.dashboard import render
from pykueue.dashboard.state import Feed, Hub
from pykueue.kube.client import ApiError
from pykueue.kube.resources import Resource
from tests.dashboard import objects as o


class FakeKube:
    """Lists ``items`` per plural (events refused with 403), watches that never send anything."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items
        self.lists: list[str] = []

    async def list(self, res: Resource, **query: Any) -> dict[str, Any]:
        self.lists.append(res.plural)
        if res.plural == "events":
            raise ApiError(403, {"reason": "Forbidden", "message": "events is forbidden"}, "GET", res.path())
        return {"items": [dict(i) for i in self.items.get(res.plural, [])], "metadata": {"resourceVersion": "5"}}

    async def watch(self, res: Resource, version: str, timeout: int = 300, **kw: Any):
        await asyncio.Event().wait()
        yield {}  # pragma: no cover - never reached


def test_a_refused_kind_is_reported_once_and_the_others_are_watched() -> None:
    kube = FakeKube({"workloads": [o.workload("a")], "clusterqueues": [o.cluster_queue("cq", None, "1")]})

    async def main() -> None:
        hub = Hub(coalesce=0.01)
        queue = hub.subscribe()
        feed = Feed(kube, hub)  # type: ignore[arg-type]
        await feed.start(timeout=10)
        try:
            assert feed.synced
            assert feed.unreadable == {"events": "403 Forbidden"}
            assert list(feed.objects["workloads"]) == ["team/a"] and list(feed.objects["clusterqueues"]) == ["cq"]
            assert await asyncio.wait_for(queue.get(), 5) == 1  # the lists' changes, one update
            assert kube.lists.count("events") == 1  # not retried
        finally:
            await feed.stop()
    asyncio.run(main())
    assert render.unreadable({"events": "403 Forbidden"}) == (
        '<p class="muted" role="status">Not watched, so not shown: events (403 Forbidden).</p>')


def test_a_slow_page_keeps_only_the_newest_version() -> None:
    async def main() -> None:
        hub = Hub()
        queue = hub.subscribe()
        for _ in range(3):
            hub.publish()
        assert (queue.qsize(), await queue.get()) == (1, 3)
        hub.unsubscribe(queue)
        hub.publish()
        assert queue.empty() and hub.subscribers == 0
    asyncio.run(main())


def event(name: str, kind: str, form: str = "involvedObject") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "team"},
            form: {"kind": kind, "name": "x"}, "reason": "R"}


class EventsKube(FakeKube):
    """Serves events too: a list, then one watch that adds and changes some."""

    def __init__(self, items: dict[str, list[dict[str, Any]]], changes: list[dict[str, Any]]) -> None:
        super().__init__(items)
        self.changes = changes

    async def list(self, res: Resource, **query: Any) -> dict[str, Any]:
        self.lists.append(res.plural)
        return {"items": [dict(i) for i in self.items.get(res.plural, [])], "metadata": {"resourceVersion": "5"}}

    async def watch(self, res: Resource, version: str, timeout: int = 300, **kw: Any):
        if res.plural == "events":
            for change in self.changes:
                yield change
        await asyncio.Event().wait()


def test_only_the_events_of_kueues_and_its_integrations_objects_are_kept() -> None:
    """The feed used to keep every Event in the cluster (nodes, deployments, every Pod's pulls)."""
    listed = [event("wl", "Workload"), event("cq", "ClusterQueue"), event("job", "Job"), event("pod", "Pod"),
              event("node", "Node"), event("rs", "ReplicaSet"), event("new-form", "Workload", "regarding")]
    changes = [{"type": "ADDED", "object": event("later-node", "Node")},
               {"type": "MODIFIED", "object": event("rs", "ReplicaSet")},
               {"type": "ADDED", "object": event("ns", "Namespace")},
               {"type": "ADDED", "object": event("later-lq", "LocalQueue")}]  # the last: then all are read
    kube = EventsKube({"events": listed}, changes)

    async def main() -> None:
        feed = Feed(kube, Hub(coalesce=0.01))  # type: ignore[arg-type]
        await feed.start(timeout=10)
        try:
            store = feed.objects["events"]
            deadline = asyncio.get_running_loop().time() + 10
            while "team/later-lq" not in store and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
            assert sorted(store) == ["team/cq", "team/job", "team/later-lq", "team/new-form", "team/pod", "team/wl"]
        finally:
            await feed.stop()
    asyncio.run(main())
