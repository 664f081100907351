"""Writes carry their object's identity: on the real API server, a merge patch of a Workload
(spec.active, finalizers) decided on an object that was deleted and re-created under the same name
fails instead of landing on its successor, because it carries the object's ``uid``. (A server-side
apply of the status subresource cannot be guarded so: the API server takes its metadata from the
stored object.)"""

from __future__ import annotations

import json

import pytest

from pykueue.devcluster.cluster import DevCluster

pytestmark = pytest.mark.cluster

NAMESPACE = "pykueue-uid-precondition"
WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": NAMESPACE},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}]}}


def _create(cluster: DevCluster) -> dict:
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(WORKLOAD))
    return json.loads(cluster.kubectl("get", "workload", "w", "-n", NAMESPACE, "-o", "json").stdout)


def _merge_patch(cluster: DevCluster, patch: dict) -> tuple[int, str]:
    result = cluster.kubectl("patch", "workload", "w", "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch),
                             check=False)
    return result.returncode, result.stderr


def test_a_patch_for_a_deleted_workload_fails_on_its_successor(crd_cluster: DevCluster) -> None:  # noqa: F811
    crd_cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE, "--ignore-not-found")
    first = _create(crd_cluster)
    stale = {"metadata": {"uid": first["metadata"]["uid"]}, "spec": {"active": False}}
    code, err = _merge_patch(crd_cluster, stale)
    assert code == 0, err
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE)
    second = _create(crd_cluster)
    code, err = _merge_patch(crd_cluster, stale)  # decided on the old object
    assert code != 0 and "uid" in err.lower(), err
    fresh = json.loads(crd_cluster.kubectl("get", "workload", "w", "-n", NAMESPACE, "-o", "json").stdout)
    assert fresh["spec"].get("active", True) is True and fresh["metadata"]["uid"] == second["metadata"]["uid"]


def test_a_status_apply_with_a_stale_resource_version_fails_on_a_successor(crd_cluster: DevCluster) -> None:  # noqa: F811
    """What makes an admission write strict (upstream's ApplyAdmissionStatus with strict=true): a
    status apply that names the resourceVersion it was decided on is refused (409) once the object
    has changed, as on a successor of the same name; the same apply with the current one lands."""
    crd_cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE, "--ignore-not-found")
    first = _create(crd_cluster)
    crd_cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE)
    second = _create(crd_cluster)
    condition = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}

    def apply(version: str) -> tuple[int, str]:
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "w", "namespace": NAMESPACE, "resourceVersion": version},
                "status": {"conditions": [condition]}}
        result = crd_cluster.kubectl("apply", "--server-side", "--subresource=status", "--field-manager=t", "-f", "-",
                                     input=json.dumps(body), check=False)
        return result.returncode, result.stderr
    code, err = apply(first["metadata"]["resourceVersion"])
    assert code != 0 and "modified" in err.lower(), err
    fresh = json.loads(crd_cluster.kubectl("get", "workload", "w", "-n", NAMESPACE, "-o", "json").stdout)
    assert not (fresh.get("status") or {}).get("conditions")
    code, err = apply(second["metadata"]["resourceVersion"])
    assert code == 0, err
