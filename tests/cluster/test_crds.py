"""The generated CRDs on the real API server: accepted, faithful to pykueue's inputs, strict, with status.

The session's cluster is shared, so the CRDs are applied server side (idempotent) and every object a
test creates lives in its own namespace or is only dry-run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.devcluster.cluster import DevCluster
from pykueue.manifests import crds
from tests.manifests.examples import all_examples

pytestmark = pytest.mark.cluster

DRY_RUN_NAMESPACE = "pykueue-crd-examples"
STATUS_NAMESPACE = "pykueue-crd-status"
NAMESPACED = {k.kind for k in crds.KINDS if k.namespaced}


def _namespace(cluster: DevCluster, name: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest))


def _apply(cluster: DevCluster, *args: str, manifest: dict[str, Any]) -> Any:
    return cluster.kubectl("apply", "--server-side", *args, "-f", "-", input=json.dumps(manifest), check=False)


# --- (1) accepted and established -------------------------------------------------------------------------


def test_crds_are_established_and_structural(crd_cluster: DevCluster) -> None:
    items = json.loads(crd_cluster.kubectl("get", "crd", "-l", "app.kubernetes.io/part-of=pykueue", "-o", "json").stdout)
    got = {item["metadata"]["name"]: item for item in items["items"]}
    assert set(got) == {k.name for k in crds.KINDS}
    for name, item in got.items():
        conditions = {c["type"]: c["status"] for c in item["status"]["conditions"]}
        assert conditions.get("Established") == "True", (name, conditions)
        assert conditions.get("NamesAccepted") == "True", (name, conditions)
        assert "NonStructuralSchema" not in conditions, (name, item["status"]["conditions"])
        assert item["status"]["storedVersions"] == ["v1beta2"]
    resources = crd_cluster.kubectl("api-resources", "--api-group=kueue.x-k8s.io", "-o", "wide").stdout
    assert "queue,queues,lq" in resources and "flavor,flavors,rf" in resources


# --- (2) every example pykueue accepts is accepted, and comes back with only the defaults added ------------


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every scalar (and empty container) of ``value`` with its path of keys and indexes."""
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from _leaves(sub, (*path, key))
    elif isinstance(value, list) and value:
        for i, sub in enumerate(value):
            yield from _leaves(sub, (*path, i))
    else:
        yield path, value


def _get(value: Any, path: tuple[str | int, ...]) -> Any:
    cur = value
    for part in path:
        in_list = isinstance(part, int) and isinstance(cur, list) and part < len(cur)
        in_map = isinstance(part, str) and isinstance(cur, dict) and part in cur
        if not (in_list or in_map):
            return KeyError  # absent: never equal to a YAML value
        cur = cur[part]
    return cur


def test_every_accepted_example_round_trips(crd_cluster: DevCluster) -> None:
    examples = all_examples()
    assert len(examples) > 100  # the scenarios really were found
    _namespace(crd_cluster, DRY_RUN_NAMESPACE)
    # one dry-run apply for them all: names made unique (scenarios reuse them), metadata is not under test
    items = []
    for i, example in enumerate(examples):
        doc = copy.deepcopy(example.doc)
        meta = {k: v for k, v in (doc.get("metadata") or {}).items() if k in ("labels", "annotations")}
        meta["name"] = f"example-{i}"
        if doc["kind"] in NAMESPACED:
            meta["namespace"] = DRY_RUN_NAMESPACE
        doc["metadata"] = meta
        items.append(doc)
    result = _apply(crd_cluster, "--dry-run=server", "-o", "json",
                    manifest={"apiVersion": "v1", "kind": "List", "items": items})
    assert result.returncode == 0, result.stderr
    returned = json.loads(result.stdout)
    by_name = {obj["metadata"]["name"]: obj for obj in returned.get("items", [returned])}

    failures = []
    defaulted = 0
    for i, example in enumerate(examples):
        got = by_name.get(f"example-{i}")
        if got is None:
            failures.append(f"{example.label}: not returned")
            continue
        sent = {k: v for k, v in items[i].items() if k not in ("metadata", "status")}
        back = {k: v for k, v in got.items() if k not in ("metadata", "status")}
        missing = [p for p, v in _leaves(sent) if v is not None and _get(back, p) != v]
        if missing:
            failures.append(f"{example.label}: pruned or changed: {missing[:5]}")
            continue
        expected = crds.apply_defaults(crds.schema_of(example.doc["kind"]), sent)
        defaulted += back != sent
        if back != expected:
            failures.append(f"{example.label}: expected {json.dumps(expected)[:300]}, got {json.dumps(back)[:300]}")
    assert not failures, f"{len(failures)} of {len(examples)} examples:\n" + "\n".join(failures[:20])
    assert defaulted > 100  # the server's defaulting was exercised, and matched apply_defaults


# --- (3) what the schema refuses, with the field path --------------------------------------------------


def _cluster_queue(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}
        ]
    }
    base.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "refused"}, "spec": base}


def _quota(value: Any) -> dict[str, Any]:
    cq = _cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = value
    return cq


def _workload(**pod_set: Any) -> dict[str, Any]:
    ps = {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}, **pod_set}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "refused", "namespace": "default"}, "spec": {"queueName": "q", "podSets": [ps]},
    }


QUOTA_PATH = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
REFUSED = {
    "enum": (_cluster_queue(queueingStrategy="Fifo"), 'spec.queueingStrategy: Unsupported value: "Fifo"'),
    "nested enum": (
        _cluster_queue(preemption={"withinClusterQueue": "Always"}),
        'spec.preemption.withinClusterQueue: Unsupported value: "Always"',
    ),
    "minimum": (_workload(count=-1), "spec.podSets[0].count: Invalid value: -1: spec.podSets[0].count in body should be greater than or equal to 0"),
    "quantity pattern": (_quota("ten"), f'{QUOTA_PATH}: Invalid value: "ten": {QUOTA_PATH} in body should match'),
    # as with upstream's CRD: a quantity is an integer or a string, never a float (pykueue reads 1.5)
    "quantity float": (_quota(1.5), f"{QUOTA_PATH} in body must be of type integer"),
    "pod set name": (_workload(name="Main"), 'spec.podSets[0].name: Invalid value: "Main"'),
    "unknown field": (_cluster_queue(queueingStrategyy="StrictFIFO"), ".spec.queueingStrategyy: field not declared in schema"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_invalid_objects_are_refused_with_their_path(crd_cluster: DevCluster, case: str) -> None:
    manifest, message = REFUSED[case]
    result = _apply(crd_cluster, "--dry-run=server", manifest=manifest)
    assert result.returncode != 0, f"{case}: accepted"
    assert message in result.stderr, result.stderr


# --- (4) the status subresource ------------------------------------------------------------------------


CONDITION = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}


def test_workload_status_is_a_subresource(crd_cluster: DevCluster) -> None:
    _namespace(crd_cluster, STATUS_NAMESPACE)
    wl = _workload()
    wl["metadata"] = {"name": "status-probe", "namespace": STATUS_NAMESPACE}
    wl["status"] = {"conditions": [{**CONDITION, "type": "Finished"}]}
    crd_cluster.kubectl("delete", "workload", "status-probe", "-n", STATUS_NAMESPACE, "--ignore-not-found")
    created = _apply(crd_cluster, "-o", "json", manifest=wl)
    assert created.returncode == 0, created.stderr
    assert "status" not in json.loads(created.stdout)  # the main endpoint ignores status

    patch = {
        "spec": {"active": False, "queueName": "elsewhere"},
        "status": {
            "conditions": [CONDITION],
            "admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "500m"}, "count": 1}]},
        },
    }
    crd_cluster.kubectl("patch", "workload", "status-probe", "-n", STATUS_NAMESPACE, "--subresource=status",
                  "--type=merge", "-p", json.dumps(patch))
    got = json.loads(crd_cluster.kubectl("get", "workload", "status-probe", "-n", STATUS_NAMESPACE, "-o", "json").stdout)
    assert got["spec"]["active"] is True and got["spec"]["queueName"] == "q"  # /status ignores spec
    assert got["status"]["conditions"] == [CONDITION]
    assert got["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "500m"}

    table = crd_cluster.kubectl("get", "workload", "status-probe", "-n", STATUS_NAMESPACE).stdout
    assert table.split("\n")[0].split()[:4] == ["NAME", "QUEUE", "RESERVED", "IN"]
    assert table.split("\n")[1].split()[:3] == ["status-probe", "q", "cq"]

    bad = {"status": {"conditions": [{**CONDITION, "status": "Maybe"}]}}
    refused = crd_cluster.kubectl("patch", "workload", "status-probe", "-n", STATUS_NAMESPACE, "--subresource=status",
                            "--type=merge", "-p", json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert 'status.conditions[0].status: Unsupported value: "Maybe"' in refused.stderr
    crd_cluster.kubectl("delete", "workload", "status-probe", "-n", STATUS_NAMESPACE, "--wait=false")


@pytest.mark.parametrize("kind", [k.kind for k in crds.KINDS])
def test_status_subresource_exactly_where_there_is_a_status(crd_cluster: DevCluster, kind: str) -> None:
    item = json.loads(crd_cluster.kubectl("get", "crd", crds.kind_named(kind).name, "-o", "json").stdout)
    version = item["spec"]["versions"][0]
    has_status = "status" in version["schema"]["openAPIV3Schema"]["properties"]
    assert ("status" in version.get("subresources", {})) == has_status
    assert has_status == (kind not in ("ResourceFlavor", "WorkloadPriorityClass", "MultiKueueConfig"))
