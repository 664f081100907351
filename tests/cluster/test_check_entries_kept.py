"""A status apply of Kueue's never drops admission-check entries it co-owns with a check controller:
on the real API server, an entry whose controller applied only ``name`` and ``state`` keeps its
``lastTransitionTime`` and ``message`` only while Kueue's manager still owns them; an apply that leaves
the list out makes the merged entry invalid, and the server refuses the write (422, "Required value ...
Invalid value: null"). The release written before a workload is reserved again elsewhere is such an
apply: it carries the checks, reset to Pending, as an eviction's release does."""

from __future__ import annotations

import json

import pytest

from pykueue.controller.core import workload_writer
from pykueue.controller.core.workload_status import apply_body, released_status
from pykueue.devcluster.cluster import DevCluster

pytestmark = pytest.mark.cluster
NAMESPACE = "pykueue-check-entries"
T = "2026-01-01T00:00:00Z"
WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": NAMESPACE},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}]}}


def _apply(cluster: DevCluster, body: dict, manager: str):
    return cluster.kubectl("apply", "--server-side", "--force-conflicts", "--subresource=status",
                           f"--field-manager={manager}", "-f", "-", input=json.dumps(body), check=False)


def _get(cluster: DevCluster) -> dict:
    return json.loads(cluster.kubectl("get", "workload", "w", "-n", NAMESPACE, "-o", "json").stdout)


def test_the_release_before_a_move_keeps_the_check_entries_it_co_owns(crd_cluster: DevCluster) -> None:
    crd_cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE, "--ignore-not-found")
    crd_cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(WORKLOAD))
    # Kueue reserves quota in a ClusterQueue with check `a`: the entry written in full, Pending
    reserved = {"conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m", "lastTransitionTime": T}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
                                                                  "flavors": {"cpu": "f"}}]},
        "admissionChecks": [{"name": "a", "state": "Pending", "lastTransitionTime": T, "message": ""}]}
    done = _apply(crd_cluster, apply_body(_get(crd_cluster), reserved), workload_writer.MANAGER)
    assert done.returncode == 0, done.stderr
    # the check's controller sets its state, naming only the entry's key and state
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
             "metadata": {"name": "w", "namespace": NAMESPACE},
             "status": {"admissionChecks": [{"name": "a", "state": "Ready"}]}}
    done = _apply(crd_cluster, check, "check-controller")
    assert done.returncode == 0, done.stderr
    # released before it is reserved again elsewhere: the release Kueue writes first
    obj = _get(crd_cluster)
    done = _apply(crd_cluster, apply_body(obj, released_status(obj, 0.0)), workload_writer.MANAGER)
    assert done.returncode == 0, done.stderr
    after = _get(crd_cluster)["status"]
    assert "admission" not in after
    (entry,) = after["admissionChecks"]
    assert entry["name"] == "a" and entry["state"] == "Pending"  # upstream's reset on a release
    assert entry["message"] == "Reset to Pending after eviction. Previously: Ready"
