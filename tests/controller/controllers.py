"""A Controller wired to stand-ins, driven through its own handlers: an API that records server-side
applies, informer caches that are plain dicts, and one 4 cpu ClusterQueue ``cq`` with LocalQueue
``ns/lq`` on flavor ``default``, for the unit tests of the status writer, the records and the metrics."""

from __future__ import annotations

from typing import Any

from pykueue.controller.manager import Controller
from pykueue.engine import model
from pykueue.kube import resources as r


class RecordingKube:
    """Takes every server-side apply and answers it; nothing else is called on these paths."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    async def apply(self, res: r.Resource, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.applied.append(body)
        return body


class Store:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.store = objects  # an informer's cache, as the controller walks it

    def get(self, key: str) -> dict[str, Any] | None:
        return self.objects.get(key)


def kueue(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "generation": 1}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta, "spec": spec}


def workload(name: str, cpu: str) -> dict[str, Any]:
    obj = kueue("Workload", name, {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}]}, "ns")
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def controller_with(*workloads: dict[str, Any], config: model.Config | None = None) -> tuple[Controller, RecordingKube]:
    kube = RecordingKube()
    ctl = Controller(kube, config or model.Config(), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]
    queue_objects = [
        (r.RESOURCE_FLAVOR, "default", kueue("ResourceFlavor", "default", {})),
        (r.CLUSTER_QUEUE, "cq", kueue("ClusterQueue", "cq", {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]})),
        (r.LOCAL_QUEUE, "ns/lq", kueue("LocalQueue", "lq", {"clusterQueue": "cq"}, "ns")),
    ]
    for res, key, obj in queue_objects:
        ctl.informers[res.plural] = Store({key: obj})  # type: ignore[assignment]
        ctl.queue_objects.sync(res, key)
    store = {f"ns/{w['metadata']['name']}": w for w in workloads}
    ctl.informers["workloads"] = Store(store)  # type: ignore[assignment]
    for w in workloads:
        ctl.on_workload("ADDED", None, w)
    return ctl, kube


def modified(ctl: Controller, obj: dict[str, Any]) -> None:
    """A watch event, as the informer delivers it: the cache holds the new copy first."""
    ctl.informers["workloads"].objects[f"ns/{obj['metadata']['name']}"] = obj  # type: ignore[attr-defined]
    ctl.on_workload("MODIFIED", None, obj)


def quota_reserved(body: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in body["status"]["conditions"] if c["type"] == "QuotaReserved")


def sync(ctl: Controller, res: r.Resource, key: str, obj: dict[str, Any] | None) -> None:
    """Put (or, with None, take) one queue object in the cache and let the controller see it."""
    objects = ctl.informers[res.plural].objects  # type: ignore[attr-defined]
    if obj is None:
        objects.pop(key, None)
    else:
        objects[key] = obj
    ctl.queue_objects.sync(res, key)
