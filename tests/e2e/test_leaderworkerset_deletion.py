"""A deleted LeaderWorkerSet leaves nothing behind, on the tier-2 cluster with LWS's real controller (the
``lws`` addon): its leader StatefulSet goes with it, its group Workloads (owned by the LWS) are collected,
and each group's Pods, which carry Kueue's ``kueue.x-k8s.io/managed`` finalizer, lose it so that the
garbage collector can take them and the worker StatefulSets their leader Pods own.

Upstream's rule (jobframework's reconciler, step 1.1, and the Pod integration's ``Stop``): a group whose
Workload is being deleted is stopped with reason WorkloadDeleted, which deletes every member and removes
the finalizer from all of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Kueue, eventually, is_true
from tests.e2e.objects import gpu_queue
from tests.e2e.test_leaderworkerset_integration import (
    LWS_RESOURCE,
    group_workloads,
    leaderworkerset,
    running,
)

pytestmark = pytest.mark.e2e
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


@pytest.fixture
def lws_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def _listed(kueue: Kueue, resource: str, ns: str, selector: str) -> list[dict[str, Any]]:
    """Every object of ``resource`` matching ``selector``, terminating ones included."""
    return kueue.items(resource, ns, selector)


def leftovers(kueue: Kueue, ns: str, name: str) -> dict[str, list[str]]:
    """What of LWS ``name`` is still stored: its Pods, StatefulSets and Workloads, by name. Its Workloads
    are found by name (``leaderworkerset-NAME-...``): once the LWS is gone the garbage collector drops
    it from their owners while member Pods still own them."""
    selector = f"{NAME_LABEL}={name}"
    found = {"pods": sorted(p["metadata"]["name"] for p in _listed(kueue, "pods", ns, selector)),
             "statefulsets": sorted(s["metadata"]["name"] for s in _listed(kueue, "statefulsets", ns, selector)),
             "workloads": sorted(n for w in kueue.items("workloads.kueue.x-k8s.io", ns)
                                 if (n := w["metadata"]["name"]).startswith(f"leaderworkerset-{name}-"))}
    return {kind: names for kind, names in found.items() if names}


def test_a_deleted_leaderworkerset_leaves_no_pod_statefulset_or_workload(lws_kueue: Kueue, ns: str) -> None:
    """2 groups of a leader and a worker, 1 cpu each, in 4 cpu: both groups admitted and their 4 Pods
    Running (2 leader Pods of the leader StatefulSet, 2 worker StatefulSets of one Pod each). Deleted
    with the default propagation: within 3 minutes no Pod, StatefulSet or Workload of it is left."""
    gpu_queue(lws_kueue, ns, "4")
    lws_kueue.apply([leaderworkerset("gone", ns, replicas=2, size=2)])
    eventually(lambda: (found := group_workloads(lws_kueue, ns, "gone")) and len(found) == 2
               and all(is_true(w, "Admitted") for w in found.values()), 120, what="both groups admitted")
    eventually(lambda: running([p for p in _listed(lws_kueue, "pods", ns, f"{NAME_LABEL}=gone")
                                if not p["metadata"].get("deletionTimestamp")], 4), 180, what="4 pods running")
    pods = _listed(lws_kueue, "pods", ns, f"{NAME_LABEL}=gone")
    assert all("kueue.x-k8s.io/managed" in (p["metadata"].get("finalizers") or []) for p in pods)
    assert len(_listed(lws_kueue, "statefulsets", ns, f"{NAME_LABEL}=gone")) == 3  # the leaders' and 2 workers'
    assert len(leftovers(lws_kueue, ns, "gone")["workloads"]) == 2
    lws_kueue.cluster.kubectl("delete", LWS_RESOURCE, "gone", "-n", ns, "--wait=false")
    left: dict[str, list[str]] = {}

    def nothing_left() -> bool:
        left.clear()
        left.update(leftovers(lws_kueue, ns, "gone"))
        return not left

    try:
        eventually(nothing_left, 180, interval=1.0, what="nothing of the LWS left")
    except AssertionError:
        raise AssertionError(f"3 minutes after the LWS was deleted, still there: {left}") from None
