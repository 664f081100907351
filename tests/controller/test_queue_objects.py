"""The queue objects' reconciler, driven with a cache stand-in: an object that bypassed validation is
held by the engine and told on itself, never "doesn't exist"; syncing the same object twice does the
engine's work once; a deleted queue's finalizer goes only once nothing holds quota in it."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.core import views
from pykueue.controller.core.events import Recorder
from pykueue.controller.core.queue_objects import QueueObjects
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.kube import resources as r


class Store:
    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)


class PatchingKube:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []

    async def merge_patch(self, res: r.Resource, name: str, patch: dict[str, Any], namespace: str | None = None):
        self.patches.append((name, patch))
        return {}

    async def create(self, *_: Any, **__: Any) -> dict[str, Any]:
        return {}


def obj(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None, **meta: Any) -> dict[str, Any]:
    m = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", **meta}
    if namespace:
        m["namespace"] = namespace
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": m, "spec": spec}


def cq_spec(quota: str) -> dict[str, Any]:
    return {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}]}]}


def reconciler() -> tuple[QueueObjects, Engine, dict[str, Store], PatchingKube]:
    engine = Engine(model.Config())
    kube = PatchingKube()
    informers = {res.plural: Store() for res in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE)}
    changes: list[int] = []
    q = QueueObjects(engine, kube, Recorder(kube), informers, lambda: changes.append(1))  # type: ignore[arg-type]
    return q, engine, informers, kube


def put(q: QueueObjects, informers: dict[str, Store], res: r.Resource, key: str, o: dict[str, Any] | None) -> None:
    if o is None:
        informers[res.plural].store.pop(key, None)
    else:
        informers[res.plural].store[key] = o
    q.sync(res, key)


def test_invalid_cluster_queue_and_local_queue_are_held_and_say_why() -> None:
    q, engine, informers, _ = reconciler()
    put(q, informers, r.RESOURCE_FLAVOR, "f", obj("ResourceFlavor", "f", {}))
    put(q, informers, r.CLUSTER_QUEUE, "cq", obj("ClusterQueue", "cq", cq_spec("-1")))
    put(q, informers, r.LOCAL_QUEUE, "ns/lq", obj("LocalQueue", "lq", {"clusterQueue": "cq"}, "ns"))
    status = views.cluster_queue_status(engine, "cq")
    assert status is not None
    active = status["conditions"][0]
    assert (active["status"], active["reason"]) == ("False", "InvalidSpec")
    assert active["message"].startswith("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")
    lq = views.local_queue_statuses(engine)["ns/lq"]["conditions"][0]
    assert (lq["status"], lq["reason"]) == ("False", "ClusterQueueIsInactive")  # it exists: not "DoesNotExist"
    put(q, informers, r.LOCAL_QUEUE, "ns/lq", obj("LocalQueue", "lq", {"clusterQueue": "cq", "stopPolicy": "Bogus"},
                                                 "ns"))
    lq = views.local_queue_statuses(engine)["ns/lq"]["conditions"][0]
    assert (lq["status"], lq["reason"]) == ("False", "InvalidSpec") and "stopPolicy" in lq["message"]
    put(q, informers, r.CLUSTER_QUEUE, "cq", obj("ClusterQueue", "cq", cq_spec("4")))
    assert views.cluster_queue_status(engine, "cq")["conditions"][0]["reason"] == "Ready"


def test_finalizer_added_to_a_live_queue_and_removed_from_a_deleted_one_not_in_use() -> None:
    q, engine, informers, kube = reconciler()
    put(q, informers, r.CLUSTER_QUEUE, "cq", obj("ClusterQueue", "cq", cq_spec("4")))
    asyncio.run(q.reconcile_finalizer("ClusterQueue/cq"))
    assert kube.patches == [("cq", {"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use"],
                                                 "resourceVersion": "1"}})]
    kube.patches.clear()
    put(q, informers, r.CLUSTER_QUEUE, "cq", obj("ClusterQueue", "cq", cq_spec("4"), deletionTimestamp="now",
                                                 finalizers=["kueue.x-k8s.io/resource-in-use", "other"]))
    asyncio.run(q.reconcile_finalizer("ClusterQueue/cq"))
    assert kube.patches == [("cq", {"metadata": {"finalizers": ["other"], "resourceVersion": "1"}})]
    assert "cq" not in engine.cluster_queue_names()
