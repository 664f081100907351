"""On the real API server: a reservation written conditional on the copy it was decided on (issue 51
item 2) is refused once the Workload has changed since (its pod sets grown from 1 to 3, as an elastic
Job's parallelism raised while the reservation was in flight), and lands when made for the new copy."""

from __future__ import annotations

import json

import pytest

from pykueue.controller.core import workload_writer
from pykueue.controller.core.workload_status import apply_body
from pykueue.devcluster.cluster import DevCluster
from tests.cluster.test_check_entries_kept import WORKLOAD, _apply, _get

pytestmark = pytest.mark.cluster
NAMESPACE = WORKLOAD["metadata"]["namespace"]
T = "2026-01-01T00:00:00Z"


def reservation(count: int) -> dict:
    return {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m",
                            "lastTransitionTime": T}],
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": count,
                                                                      "flavors": {"cpu": "f"}}]}}


def test_a_reservation_for_a_copy_since_changed_is_refused(crd_cluster: DevCluster) -> None:
    crd_cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE, "--ignore-not-found")
    crd_cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(WORKLOAD))
    decided = _get(crd_cluster)
    crd_cluster.kubectl("patch", "workload", "w", "-n", NAMESPACE, "--type=json", "-p",
                        json.dumps([{"op": "replace", "path": "/spec/podSets/0/count", "value": 3}]))
    grown = _get(crd_cluster)
    assert grown["metadata"]["resourceVersion"] != decided["metadata"]["resourceVersion"]
    refused = _apply(crd_cluster, apply_body(grown, reservation(1), decided["metadata"]["resourceVersion"]),
                     workload_writer.MANAGER)
    assert refused.returncode != 0 and "the object has been modified" in refused.stderr, refused.stderr
    assert "admission" not in (_get(crd_cluster).get("status") or {})
    landed = _apply(crd_cluster, apply_body(grown, reservation(3), grown["metadata"]["resourceVersion"]),
                    workload_writer.MANAGER)
    assert landed.returncode == 0, landed.stderr
    assert _get(crd_cluster)["status"]["admission"]["podSetAssignments"][0]["count"] == 3
