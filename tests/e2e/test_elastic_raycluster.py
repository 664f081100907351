"""An autoscaling RayCluster as an elastic job (``kueue.x-k8s.io/elastic-job: "true"``), live with KubeRay's
operator (the ``ray`` addon) and the controller's webhooks: its worker group's replicas change while
it runs, as the autoscaler changes them, through workload slices; the cluster is never suspended.

Head 1 cpu and a worker group of 1-cpu workers in a 4-cpu ClusterQueue, worked by hand: 1 worker
admitted (2 cpu); 2 workers, the new slice needs 1 cpu more and replaces the first (3 cpu held, not
2 + 3); 4 workers would need 5 cpu: the slice waits, the cluster runs on at 2 workers and KubeRay's
new workers stay at the ``kueue.x-k8s.io/elastic-job`` scheduling gate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.elastic_objects import gated, reserved_cpu
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, local_queue
from tests.e2e.ray_objects import _template

pytestmark = pytest.mark.e2e


@pytest.fixture
def ray_hooks(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def elastic_cluster(ns: str, workers: int) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "auto", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
            "spec": {"enableInTreeAutoscaling": True,
                     "headGroupSpec": {"rayStartParams": {}, "template": _template("1")},
                     "workerGroupSpecs": [{"groupName": "workers", "replicas": workers, "minReplicas": 0,
                                           "maxReplicas": 6, "rayStartParams": {}, "template": _template("1")}]}}


def slices(kueue: Kueue, ns: str) -> list[dict[str, Any]]:
    return [w for w in kueue.items("workloads.kueue.x-k8s.io", ns)
            if any(o.get("kind") == "RayCluster" for o in w["metadata"].get("ownerReferences") or [])]


def workers_of(w: dict[str, Any]) -> int:
    return next(p["count"] for p in w["spec"]["podSets"] if p["name"] == "workers")


def admitted_with(kueue: Kueue, ns: str, workers: int) -> dict[str, Any] | None:
    return next((w for w in slices(kueue, ns) if is_true(w, "Admitted") and not is_true(w, "Finished")
                 and workers_of(w) == workers), None)


def scale(kueue: Kueue, ns: str, workers: int) -> None:
    """What the autoscaler writes: the worker group's replicas."""
    kueue.cluster.kubectl("patch", "raycluster", "auto", "-n", ns, "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": workers}]))


def running(kueue: Kueue, ns: str) -> None:
    obj = kueue.get("raycluster", "auto", ns)
    assert obj is not None and obj["spec"].get("suspend") is not True, obj and obj["spec"]


def workers_gated(kueue: Kueue, ns: str) -> tuple[int, int]:
    """(workers, of them gated)"""
    pods = [p for p in kueue.items("pods", ns) if (p["metadata"].get("labels") or {}).get("ray.io/node-type")
            == "worker" and not p["metadata"].get("deletionTimestamp")]
    return len(pods), sum(gated(p) for p in pods)


def test_an_autoscaling_raycluster_scales_through_workload_slices(ray_hooks: Kueue, ns: str) -> None:
    kueue = ray_hooks
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply([elastic_cluster(ns, 1)])
    first = eventually(lambda: admitted_with(kueue, ns, 1), 120, what="the first slice admitted")
    eventually(lambda: workers_gated(kueue, ns) == (1, 0), 120, what="its worker released from the gate")
    eventually(lambda: reserved_cpu(kueue, ns) == "2", 60, what="2 cpu reserved (the status is written within 1 s)")

    scale(kueue, ns, 2)
    second = eventually(lambda: admitted_with(kueue, ns, 2), 90, what="the 2-worker slice admitted")
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    old = eventually(lambda: next((w for w in slices(kueue, ns) if w["metadata"]["uid"] == first["metadata"]["uid"]
                                   and is_true(w, "Finished")), None), 60, what="the first slice finished")
    assert condition(old, "Finished")["reason"] == "WorkloadSliceReplaced"  # type: ignore[index]
    eventually(lambda: reserved_cpu(kueue, ns) == "3", 60, what="3 cpu reserved, not 2 + 3")
    eventually(lambda: workers_gated(kueue, ns) == (2, 0), 90, what="the second worker released")
    running(kueue, ns)

    scale(kueue, ns, 4)
    waiting = eventually(lambda: next((w for w in slices(kueue, ns) if workers_of(w) == 4
                                       and condition(w, "QuotaReserved") is not None), None),
                         60, what="the 4-worker slice answered")
    assert not is_true(waiting, "QuotaReserved"), condition(waiting, "QuotaReserved")
    eventually(lambda: workers_gated(kueue, ns) == (4, 2), 90, what="KubeRay's 2 new workers held at the gate")
    assert admitted_with(kueue, ns, 2) is not None and reserved_cpu(kueue, ns) == "3"
    running(kueue, ns)
