"""The generated CRDs' CEL rules and printer columns on the real API server.

Each of upstream's cross-field rules (``x-kubernetes-validations``) refuses an object that breaks it, with
upstream's message at upstream's path, and accepts the same object put right; the transition rules
(``oldSelf``) refuse the update and allow the ones around it, and so do pykueue's CEL forms of the Workload
update rules upstream keeps in its webhook (pod sets, reclaimable pods, admission). Then ``kubectl get``
shows upstream's columns.
Objects are dry-run where they can be; the rest live in this module's namespace or carry its prefix.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.devcluster.cluster import DevCluster
from pykueue.manifests import crds

pytestmark = pytest.mark.cluster

NS = "pykueue-crd-cel"
V2 = "kueue.x-k8s.io/v1beta2"


@pytest.fixture(scope="module")
def cel_cluster(control_plane: DevCluster) -> Iterator[DevCluster]:
    control_plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=pykueue-crds", "-f", "-",
        input=crds.to_yaml(crds.crds()),
    )
    control_plane.wait_for("Established", "crd", "--all", timeout=60)
    control_plane.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
    yield control_plane
    for kind in ("workloads", "localqueues"):
        control_plane.kubectl("delete", kind, "--all", "-n", NS, "--wait=false", check=False)
    for kind, name in (("resourceflavor", "cel-topology"), ("admissioncheck", "cel-check"),
                       ("clusterqueue", "cel-columns"), ("workloadpriorityclass", "cel-columns")):
        control_plane.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false", check=False)


def _kubectl(cluster: DevCluster, *args: str, manifest: dict[str, Any] | None = None) -> Any:
    return cluster.kubectl(*args, input=json.dumps(manifest) if manifest is not None else None, check=False)


def _dry_run(cluster: DevCluster, manifest: dict[str, Any]) -> Any:
    return _kubectl(cluster, "create", "--dry-run=server", "-f", "-", manifest=manifest)


def _refused(result: Any, path: str, kind: str, message: str) -> None:
    """The API server's CEL refusal: ``<path>: Invalid value: "<type>": <message>``."""
    assert result.returncode != 0, "accepted"
    prefix = f'{path}: Invalid value: "{kind}": ' if path else f'Invalid value: "{kind}": '
    assert prefix + message in result.stderr, result.stderr


# --- objects -------------------------------------------------------------------------------------------


def cluster_queue(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}
    base.update(spec)
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "cel-cq"}, "spec": base}


def cohort(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "cel-cohort"}, "spec": spec}


def flavor(name: str = "cel-flavor", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def workload(name: str = "cel-wl", pod_set: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    ps = {"name": "main", "count": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
          **(pod_set or {})}
    return {"apiVersion": V2, "kind": "Workload", "metadata": {"name": name, "namespace": NS},
            "spec": {"queueName": "q", "podSets": [ps], **spec}}


def _with_limit(field: str) -> dict[str, Any]:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][field] = "1"
    return cq


def _two_resources(owner: dict[str, Any]) -> dict[str, Any]:
    owner = copy.deepcopy(owner)
    owner["spec"]["resourceGroups"] = [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]
    return owner


def _fixed_two_resources(owner: dict[str, Any]) -> dict[str, Any]:
    owner = _two_resources(owner)
    owner["spec"]["resourceGroups"][0]["flavors"][0]["resources"].append({"name": "memory", "nominalQuota": "1Gi"})
    return owner


WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
PC_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
SAME_COUNT = "flavors must have the same number of resources as the coveredResources"

# name: (refused object, accepted object, the error's path, the node's CEL type, upstream's message)
CREATE_RULES: dict[str, tuple[dict[str, Any], dict[str, Any], str, str, str]] = {
    "cq borrowingLimit without cohort": (
        _with_limit("borrowingLimit"), {**_with_limit("borrowingLimit"), "spec": {
            **_with_limit("borrowingLimit")["spec"], "cohortName": "research"}},
        "spec", "object", "borrowingLimit must be nil when cohort is empty"),
    "cq flavor resources match coveredResources": (
        _two_resources(cluster_queue()), _fixed_two_resources(cluster_queue()),
        "spec.resourceGroups[0]", "object", SAME_COUNT),
    "cohort flavor resources match coveredResources": (
        _two_resources(cohort(resourceGroups=[])), _fixed_two_resources(cohort(resourceGroups=[])),
        "spec.resourceGroups[0]", "object", SAME_COUNT),
    "cq fungibility preference": (
        cluster_queue(flavorFungibility={"preference": "BorrowingOverPreemption"}),
        cluster_queue(flavorFungibility={"preference": "BorrowingOverPreemption", "whenCanBorrow": "TryNextFlavor",
                                         "whenCanPreempt": "TryNextFlavor"}),
        "spec.flavorFungibility", "object",
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"),
    "cq borrowWithinCohort needs reclaimWithinCohort": (
        cluster_queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}),
        cluster_queue(preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}),
        "spec.preemption", "object", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    "rf topology needs node labels": (
        flavor(topologyName="default"), flavor(topologyName="default", nodeLabels={"pool": "a"}),
        "spec", "object", "at least one nodeLabel is required when topology is set"),
    "rf taint effect": (
        flavor(nodeTaints=[{"key": "k", "value": "v", "effect": "Sometimes"}]),
        flavor(nodeTaints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        "spec.nodeTaints", "array", "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    "rf toleration without key": (
        flavor(tolerations=[{"operator": "Equal", "value": "v"}]), flavor(tolerations=[{"operator": "Exists"}]),
        "spec.tolerations", "array",
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"),
    "rf tolerationSeconds needs NoExecute": (
        flavor(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        flavor(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]),
        "spec.tolerations", "array", "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    "rf toleration operator": (
        flavor(tolerations=[{"key": "k", "operator": "Matches"}]), flavor(tolerations=[{"key": "k", "operator": "Equal"}]),
        "spec.tolerations", "array", "supported toleration values: 'Equal'(default), 'Exists'"),
    "rf toleration Exists without value": (
        flavor(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        flavor(tolerations=[{"key": "k", "operator": "Exists"}]),
        "spec.tolerations", "array", "a value must be empty when 'operator' is 'Exists'"),
    "rf toleration effect": (
        flavor(tolerations=[{"key": "k", "operator": "Exists", "effect": "Never"}]),
        flavor(tolerations=[{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}]),
        "spec.tolerations", "array", "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    "wl minCount at most count": (
        workload(pod_set={"minCount": 3}), workload(pod_set={"minCount": 2}),
        "spec.podSets[0]", "object", "minCount should be positive and less or equal to count"),
    "wl priority with priorityClassRef": (
        workload(priorityClassRef=WPC_REF), workload(priorityClassRef=WPC_REF, priority=100),
        "spec", "object", "priority should not be nil when priorityClassRef is set"),
    "wl PriorityClass group and kind": (
        workload(priorityClassRef={**PC_REF, "kind": "WorkloadPriorityClass"}, priority=1),
        workload(priorityClassRef=PC_REF, priority=1),
        "spec.priorityClassRef", "object", "only the PriorityClass kind is allowed for the scheduling.k8s.io group"),
    "wl WorkloadPriorityClass group and kind": (
        workload(priorityClassRef={**WPC_REF, "kind": "PriorityClass"}, priority=1),
        workload(priorityClassRef=WPC_REF, priority=1),
        "spec.priorityClassRef", "object",
        "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"),
}


@pytest.mark.parametrize("case", list(CREATE_RULES))
def test_rule_refuses_with_upstreams_message_and_accepts_the_fix(cel_cluster: DevCluster, case: str) -> None:
    bad, good, path, kind, message = CREATE_RULES[case]
    _refused(_dry_run(cel_cluster, bad), path, kind, message)
    accepted = _dry_run(cel_cluster, good)
    assert accepted.returncode == 0, accepted.stderr


def test_rules_are_upstreams_in_both_versions() -> None:
    """Every rule is on its node in v1beta2, and v1beta1 has the same ones, in its own field names."""
    for kind in crds.KINDS:
        for version in crds.VERSIONS:
            schema = crds.kind_schema(kind, version)
            for path, rules in crds.validations(kind.kind, version).items():
                assert crds.node_at(schema, path)["x-kubernetes-validations"] == rules
    v1 = {k: [r["message"] for rules in crds.validations(k, crds.V1BETA1).values() for r in rules]
          for k in crds.VALIDATIONS}
    v2 = {k: [r["message"] for rules in crds.validations(k).values() for r in rules] for k in crds.VALIDATIONS}
    assert v1["ClusterQueue"] == v2["ClusterQueue"]
    assert "priority should not be nil when priorityClassName is set" in v1["Workload"]
    assert not any("priorityClassRef" in m for m in v1["Workload"])


# --- transition rules: the update is refused, the object stays as it was ------------------------------


def _apply(cluster: DevCluster, manifest: dict[str, Any]) -> None:
    result = _kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-f", "-", manifest=manifest)
    assert result.returncode == 0, result.stderr


def _patch(cluster: DevCluster, kind: str, name: str, patch: dict[str, Any], *, status: bool = False,
           namespaced: bool = False) -> Any:
    args = ["patch", kind, name, "--type=merge", "-p", json.dumps(patch)]
    args += ["--subresource=status"] if status else []
    args += ["-n", NS] if namespaced else []
    return _kubectl(cluster, *args)


def test_local_queue_cluster_queue_is_immutable(cel_cluster: DevCluster) -> None:
    _apply(cel_cluster, {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "cel-lq", "namespace": NS},
                         "spec": {"clusterQueue": "team-a"}})
    _refused(_patch(cel_cluster, "localqueue", "cel-lq", {"spec": {"clusterQueue": "team-b"}}, namespaced=True),
             "spec.clusterQueue", "string", "field is immutable")
    allowed = _patch(cel_cluster, "localqueue", "cel-lq", {"spec": {"stopPolicy": "Hold"}}, namespaced=True)
    assert allowed.returncode == 0, allowed.stderr


def test_admission_check_controller_name_is_immutable(cel_cluster: DevCluster) -> None:
    _apply(cel_cluster, {"apiVersion": V2, "kind": "AdmissionCheck", "metadata": {"name": "cel-check"},
                         "spec": {"controllerName": "example.com/a"}})
    _refused(_patch(cel_cluster, "admissioncheck", "cel-check", {"spec": {"controllerName": "example.com/b"}}),
             "spec.controllerName", "string", "field is immutable")


def test_resource_flavor_with_topology_is_immutable(cel_cluster: DevCluster) -> None:
    _apply(cel_cluster, flavor("cel-topology", topologyName="default", nodeLabels={"pool": "a"}))
    _refused(_patch(cel_cluster, "resourceflavor", "cel-topology", {"spec": {"nodeLabels": {"pool": "b"}}}),
             "spec", "object", "resourceFlavorSpec are immutable when topologyName is set")
    _apply(cel_cluster, flavor("cel-plain", nodeLabels={"pool": "a"}))  # without a topology it may change
    changed = _patch(cel_cluster, "resourceflavor", "cel-plain", {"spec": {"nodeLabels": {"pool": "b"}}})
    assert changed.returncode == 0, changed.stderr
    cel_cluster.kubectl("delete", "resourceflavor", "cel-plain")


CONDITION = {"status": "True", "reason": "Test", "message": "set by the test", "lastTransitionTime": "2024-01-01T00:00:00Z"}
ADMISSION = {"clusterQueue": "cq", "podSetAssignments": [
    {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]}


def _reserved(cluster: DevCluster, name: str, *types: str, **spec: Any) -> None:
    """A Workload whose status says it holds quota (and whatever else ``types`` name)."""
    cluster.kubectl("delete", "workload", name, "-n", NS, "--ignore-not-found")
    _apply(cluster, workload(name, **spec))
    conditions = [{**CONDITION, "type": t} for t in ("QuotaReserved", *types)]
    result = _patch(cluster, "workload", name, {"status": {"conditions": conditions, "admission": ADMISSION}},
                    status=True, namespaced=True)
    assert result.returncode == 0, result.stderr


def test_workload_fields_are_immutable_while_quota_is_reserved(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-reserved", priorityClassRef=PC_REF, priority=10)
    refusals = {
        "queueName is immutable while workload quota reserved": {"spec": {"queueName": "other"}},
        "priorityClassRef is immutable while workload quota reserved": {"spec": {"priorityClassRef": None}},
        "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved":
            {"spec": {"priorityClassRef": {"name": "low"}}},
        "priorityClassRef.group is immutable while workload quota reserved":
            {"spec": {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"}}},
    }
    for message, patch in refusals.items():
        _refused(_patch(cel_cluster, "workload", "cel-reserved", patch, namespaced=True), "", "object", message)
    allowed = _patch(cel_cluster, "workload", "cel-reserved", {"spec": {"priority": 20}}, namespaced=True)
    assert allowed.returncode == 0, allowed.stderr  # the priority itself may change (upstream's rule)
    # the same change is allowed once the quota is released
    released = _patch(cel_cluster, "workload", "cel-reserved", {"status": {"conditions": [
        {**CONDITION, "type": "QuotaReserved", "status": "False"}], "admission": None}}, status=True, namespaced=True)
    assert released.returncode == 0, released.stderr
    moved = _patch(cel_cluster, "workload", "cel-reserved", {"spec": {"queueName": "other"}}, namespaced=True)
    assert moved.returncode == 0, moved.stderr


def test_workload_maximum_execution_time_is_immutable_while_admitted(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-admitted", "Admitted", maximumExecutionTimeSeconds=60)
    _refused(_patch(cel_cluster, "workload", "cel-admitted", {"spec": {"maximumExecutionTimeSeconds": 120}},
                    namespaced=True), "", "object", "maximumExecutionTimeSeconds is immutable while workload quota reserved")


def test_workload_admission_has_one_assignment_per_pod_set(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-assignments")
    two = {**ADMISSION, "podSetAssignments": [*ADMISSION["podSetAssignments"], {"name": "extra", "count": 1}]}
    _refused(_patch(cel_cluster, "workload", "cel-assignments", {"status": {"admission": two}}, status=True,
                    namespaced=True), "", "object", "podSetAssignments must have the same number of podSets as the spec")


def test_workload_cluster_name_rules(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-cluster-name")
    both = {"status": {"clusterName": "a", "nominatedClusterNames": ["b"]}}
    _refused(_patch(cel_cluster, "workload", "cel-cluster-name", both, status=True, namespaced=True),
             "status", "object", "clusterName and nominatedClusterNames are mutually exclusive")
    first = _patch(cel_cluster, "workload", "cel-cluster-name", {"status": {"clusterName": "a"}}, status=True,
                   namespaced=True)
    assert first.returncode == 0, first.stderr
    _refused(_patch(cel_cluster, "workload", "cel-cluster-name", {"status": {"clusterName": "b"}}, status=True,
                    namespaced=True), "status", "object", "clusterName is immutable once set")


# --- upstream's webhook-only update rules, as pykueue's CEL rules -----------------------------------------


def _pod_set(count: int) -> dict[str, Any]:
    return workload()["spec"]["podSets"][0] | {"count": count}


def _status(cluster: DevCluster, name: str, status: dict[str, Any]) -> Any:
    return _patch(cluster, "workload", name, {"status": status}, status=True, namespaced=True)


def _accepted(result: Any) -> None:
    assert result.returncode == 0, result.stderr


def test_workload_pod_sets_are_immutable_while_quota_is_reserved(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-pod-sets")
    _refused(_patch(cel_cluster, "workload", "cel-pod-sets", {"spec": {"podSets": [_pod_set(3)]}}, namespaced=True),
             "spec.podSets", "object", "field is immutable")
    # the templates are the webhook's to compare (decoded, as upstream's): what a Go client's Get-then-Update
    # sends (`metadata: {}`, an empty `resources`) is no change to it, and the API server takes it as sent
    round_trip = _pod_set(2)
    round_trip["template"] = {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {}}]}}
    _accepted(_patch(cel_cluster, "workload", "cel-pod-sets", {"spec": {"podSets": [round_trip]}}, namespaced=True))
    # a count going down is let through (ElasticJobsViaWorkloadSlices, on by default: a scale-down in place)
    _accepted(_patch(cel_cluster, "workload", "cel-pod-sets", {"spec": {"podSets": [_pod_set(1)]}}, namespaced=True))
    # while no quota is reserved they may change, and so once it is released
    _apply(cel_cluster, workload("cel-pod-sets-free"))
    _accepted(_patch(cel_cluster, "workload", "cel-pod-sets-free", {"spec": {"podSets": [_pod_set(3)]}},
                     namespaced=True))
    _accepted(_status(cel_cluster, "cel-pod-sets", {"conditions": [{**CONDITION, "type": "QuotaReserved",
                                                                    "status": "False"}], "admission": None}))
    _accepted(_patch(cel_cluster, "workload", "cel-pod-sets", {"spec": {"podSets": [_pod_set(3)]}}, namespaced=True))


def test_workload_reclaimable_pods_only_grow_while_quota_is_reserved(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-reclaimable")
    _accepted(_status(cel_cluster, "cel-reclaimable", {"reclaimablePods": [{"name": "main", "count": 1}]}))
    _accepted(_status(cel_cluster, "cel-reclaimable", {"reclaimablePods": [{"name": "main", "count": 2}]}))
    _refused(_status(cel_cluster, "cel-reclaimable", {"reclaimablePods": [{"name": "main", "count": 1}]}),
             "status.reclaimablePods", "object", "reclaimablePods counts cannot decrease while workload quota reserved")
    _refused(_status(cel_cluster, "cel-reclaimable", {"reclaimablePods": None}),
             "status.reclaimablePods", "object", "reclaimablePods entries cannot be removed while workload quota reserved")
    # the write that releases the quota may lower them
    _accepted(_status(cel_cluster, "cel-reclaimable", {
        "conditions": [{**CONDITION, "type": "QuotaReserved", "status": "False"}], "admission": None,
        "reclaimablePods": [{"name": "main", "count": 0}]}))


def test_workload_admission_is_set_or_cleared_never_changed(cel_cluster: DevCluster) -> None:
    _reserved(cel_cluster, "cel-admission")  # set when absent
    other_queue = {**ADMISSION, "clusterQueue": "other"}
    _refused(_status(cel_cluster, "cel-admission", {"admission": other_queue}),
             "status.admission", "object", "field is immutable")
    other_flavor = {**ADMISSION, "podSetAssignments": [
        {**ADMISSION["podSetAssignments"][0], "flavors": {"cpu": "spot"}}]}
    _refused(_status(cel_cluster, "cel-admission", {"admission": other_flavor}),
             "status.admission", "object", "field is immutable")
    # the topology assignment may come later, as upstream's webhook allows
    topology = {**ADMISSION, "podSetAssignments": [
        {**ADMISSION["podSetAssignments"][0], "topologyAssignment": {"levels": ["host"], "slices": []}}]}
    _accepted(_status(cel_cluster, "cel-admission", {"admission": topology}))
    # the admission side's own apply of the same admission is no change
    same = {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "cel-admission", "namespace": NS},
            "status": {"admission": topology}}
    _accepted(_kubectl(cel_cluster, "apply", "--server-side", "--force-conflicts", "--field-manager=kueue-admission",
                       "--subresource=status", "-f", "-", manifest=same))
    # evicted: the admission kept while the job stops, then cleared, then set again elsewhere
    _accepted(_status(cel_cluster, "cel-admission", {"conditions": [
        {**CONDITION, "type": "QuotaReserved", "status": "False"}, {**CONDITION, "type": "Evicted"}]}))
    _accepted(_status(cel_cluster, "cel-admission", {"admission": None}))
    _accepted(_status(cel_cluster, "cel-admission", {"admission": other_queue}))


# --- printer columns ----------------------------------------------------------------------------------


def _table(cluster: DevCluster, *args: str) -> list[list[str]]:
    """``kubectl get`` output split on runs of 2+ spaces (headers such as PENDING WORKLOADS keep theirs)."""
    out = cluster.kubectl("get", *args).stdout
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


def test_kubectl_get_shows_upstreams_columns(cel_cluster: DevCluster) -> None:
    cq = cluster_queue(cohortName="research", queueingStrategy="StrictFIFO")
    cq["metadata"]["name"] = "cel-columns"
    _apply(cel_cluster, cq)
    counts = _patch(cel_cluster, "clusterqueue", "cel-columns",
                    {"status": {"pendingWorkloads": 3, "admittedWorkloads": 2, "reservingWorkloads": 2}}, status=True)
    assert counts.returncode == 0, counts.stderr
    assert _table(cel_cluster, "clusterqueue", "cel-columns") == [
        ["NAME", "COHORT", "PENDING WORKLOADS"], ["cel-columns", "research", "3"]]
    assert _table(cel_cluster, "clusterqueue", "cel-columns", "-o", "wide") == [
        ["NAME", "COHORT", "STRATEGY", "PENDING WORKLOADS", "ADMITTED WORKLOADS"],
        ["cel-columns", "research", "StrictFIFO", "3", "2"]]

    _apply(cel_cluster, {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "cel-columns", "namespace": NS},
                         "spec": {"clusterQueue": "cel-columns"}})
    _patch(cel_cluster, "localqueue", "cel-columns", {"status": {"pendingWorkloads": 1, "admittedWorkloads": 4}},
           status=True, namespaced=True)
    assert _table(cel_cluster, "localqueue", "cel-columns", "-n", NS) == [
        ["NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS"], ["cel-columns", "cel-columns", "1", "4"]]

    _reserved(cel_cluster, "cel-columns", "Admitted")
    header, row = _table(cel_cluster, "workload", "cel-columns", "-n", NS)
    assert header == ["NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE"]
    assert row[:4] == ["cel-columns", "q", "cq", "True"]

    _apply(cel_cluster, {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "cel-columns"},
                         "value": 1000})
    assert _table(cel_cluster, "workloadpriorityclass", "cel-columns") == [["NAME", "VALUE"], ["cel-columns", "1000"]]
