"""Upstream's StatefulSet reconciler during a rolling update (``shouldUngate``/``shouldFinalize``):
while ``status.currentRevision`` differs from ``status.updateRevision``, a replica labelled with the
current (old) revision is ungated and loses Kueue's finalizer; a replica of the new revision waits
for the Workload as any other; without an update under way nothing is released."""

from __future__ import annotations

from typing import Any

from pykueue.jobs.framework import Patch
from pykueue.jobs.statefulset import workload as statefulset

GATE = "kueue.x-k8s.io/admission"
FINALIZER = "kueue.x-k8s.io/managed"


def sts(current: str, update: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u1", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 2, "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}},
                "spec": {"containers": [{"name": "c"}]}}},
            "status": {"currentRevision": current, "updateRevision": update}}


def replica(index: int, revision: str) -> dict[str, Any]:
    name = statefulset.name_of(sts("r1", "r1"))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"s-{index}", "namespace": "ns", "resourceVersion": "7",
                         "finalizers": [FINALIZER],
                         "labels": {"controller-revision-hash": revision, "kueue.x-k8s.io/queue-name": "lq",
                                    "kueue.x-k8s.io/pod-group-name": name,
                                    "kueue.x-k8s.io/prebuilt-workload-name": name},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s",
                                              "uid": "u1", "controller": True}]},
            "spec": {"schedulingGates": [{"name": GATE}, {"name": "other"}], "containers": [{"name": "c"}]},
            "status": {"phase": "Pending"}}


def pod_patches(actions: list[Any]) -> dict[str, Any]:
    return {a.name: a.body for a in actions if isinstance(a, Patch) and a.kind == "Pod"}


def test_an_old_revision_replica_is_released_during_a_rolling_update() -> None:
    workload = {"metadata": {"name": statefulset.name_of(sts("r1", "r2")), "namespace": "ns",
                             "ownerReferences": [statefulset.owner_reference(sts("r1", "r2"))]},
                "spec": {"queueName": "lq"}}
    patches = pod_patches(statefulset.reconcile(sts("r1", "r2"), workload, [replica(0, "r2"), replica(1, "r1")]))
    assert patches == {"s-1": {"metadata": {"finalizers": None, "resourceVersion": "7"},
                               "spec": {"schedulingGates": [{"name": "other"}]}}}


def test_nothing_is_released_without_an_update_under_way() -> None:
    workload = {"metadata": {"name": statefulset.name_of(sts("r1", "r1")), "namespace": "ns",
                             "ownerReferences": [statefulset.owner_reference(sts("r1", "r1"))]},
                "spec": {"queueName": "lq"}}
    assert pod_patches(statefulset.reconcile(sts("r1", "r1"), workload, [replica(0, "r1"), replica(1, "r1")])) == {}
