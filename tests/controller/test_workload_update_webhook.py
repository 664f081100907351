"""The Workload validating webhook on updates: upstream's ValidateWorkloadUpdate against the old object.

Each case is an AdmissionReview ``request`` (``UPDATE``, ``object`` and ``oldObject``) through
``admission.validate``, as the API server sends it: allowed, or refused with upstream's field path and
message. The rules: ``spec.podSets`` fixed while the old object holds quota (QuotaReserved=True),
``status.reclaimablePods`` never lower nor shorter while both hold it, ``status.admission`` set or cleared
but never changed in place.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import validation
from pykueue.api.loader import read_workload
from pykueue.controller.webhooks import admission

ADMISSION = {"clusterQueue": "cq", "podSetAssignments": [
    {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]}
IMMUTABLE = "Invalid value: field is immutable"


def condition(kind: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "Test", "message": "m",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}


def workload(*, count: int = 2, cpu: str = "1", reserved: bool = False, admission_: dict[str, Any] | None = None,
             reclaimable: dict[str, int] | None = None, pod_sets: int = 1,
             api_version: str = "kueue.x-k8s.io/v1beta2") -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}
    names = ["main", *[f"extra{i}" for i in range(1, pod_sets)]]
    wl: dict[str, Any] = {
        "apiVersion": api_version, "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "managedFields": [{"manager": "kubectl"}]},
        "spec": {"queueName": "q", "podSets": [{"name": n, "count": count, "template": copy.deepcopy(template)}
                                                for n in names]},
    }
    status: dict[str, Any] = {}
    if reserved:
        status["conditions"] = [condition("QuotaReserved")]
    if admission_ is not None:
        status["admission"] = admission_
    if reclaimable is not None:
        status["reclaimablePods"] = [{"name": n, "count": c} for n, c in reclaimable.items()]
    if status:
        wl["status"] = status
    return wl


def review(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    return admission.validate({"uid": "1", "operation": "UPDATE", "namespace": "ns", "object": new,
                               "oldObject": old})


def assert_allowed(new: dict[str, Any], old: dict[str, Any]) -> None:
    got = review(new, old)
    assert got["allowed"] is True, got


def assert_refused(new: dict[str, Any], old: dict[str, Any], message: str) -> None:
    got = review(new, old)
    assert got["allowed"] is False, got
    assert got["status"]["code"] == 403
    assert got["status"]["message"] == message


def reserved(**kw: Any) -> dict[str, Any]:
    return workload(reserved=True, admission_=copy.deepcopy(ADMISSION), **kw)


# --- spec.podSets ------------------------------------------------------------------------------------


def test_a_pod_sets_count_is_fixed_while_quota_is_reserved() -> None:
    assert_refused(reserved(count=3), reserved(), f"spec.podSets.0: {IMMUTABLE}")


def test_a_pod_set_template_is_fixed_while_quota_is_reserved() -> None:
    new = reserved()
    new["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"] = "y"
    assert_refused(new, reserved(), f"spec.podSets.0: {IMMUTABLE}")


def test_adding_a_pod_set_while_quota_is_reserved_names_the_list() -> None:
    # and, as upstream's ValidateWorkload of the new object, the admission no longer covers every pod set
    assert_refused(reserved(pod_sets=2), reserved(),
                   "[status.admission.podSetAssignments: podSetAssignments must have the same number of podSets as "
                   f"the spec, spec.podSets: {IMMUTABLE}]")


def test_the_same_quantity_spelled_otherwise_is_no_change() -> None:
    assert_allowed(reserved(cpu="1000m"), reserved(cpu="1"))


def test_pod_sets_may_change_while_no_quota_is_reserved() -> None:
    assert_allowed(workload(count=3), workload())
    assert_allowed(workload(pod_sets=2), workload())
    # the old object decides: a released workload may change in the same write that releases it
    released = workload(count=3)
    released["status"] = {"conditions": [condition("QuotaReserved", "False")]}
    assert_refused(released, reserved(), f"spec.podSets.0: {IMMUTABLE}")
    assert_allowed(reserved(count=3), workload(admission_=copy.deepcopy(ADMISSION)))  # admission alone: no hold


# --- status.reclaimablePods ----------------------------------------------------------------------------


def test_reclaimable_pods_may_grow_while_quota_is_reserved() -> None:
    assert_allowed(reserved(reclaimable={"main": 1}), reserved())
    assert_allowed(reserved(reclaimable={"main": 2}), reserved(reclaimable={"main": 1}))
    assert_allowed(reserved(reclaimable={"main": 1}), reserved(reclaimable={"main": 1}))


def test_a_reclaimable_count_never_goes_down_while_quota_is_reserved() -> None:
    assert_refused(reserved(reclaimable={"main": 1}), reserved(reclaimable={"main": 2}),
                   "status.reclaimablePods[main].count: Invalid value: 1: cannot be less then 2")


def test_a_reclaimable_entry_is_never_removed_while_quota_is_reserved() -> None:
    assert_refused(reserved(), reserved(reclaimable={"main": 1}),
                   "status.reclaimablePods[main]: Required value: cannot be removed")
    assert_refused(reserved(pod_sets=2, reclaimable={"main": 0}),
                   reserved(pod_sets=2, reclaimable={"main": 1, "extra1": 2}),
                   "[status.admission.podSetAssignments: podSetAssignments must have the same number of podSets as "
                   "the spec, status.reclaimablePods[main].count: Invalid value: 0: cannot be less then 1, "
                   "status.reclaimablePods[extra1]: Required value: cannot be removed]")


def test_reclaimable_pods_may_go_down_once_quota_is_released() -> None:
    released = workload(reclaimable={"main": 0})
    released["status"]["conditions"] = [condition("QuotaReserved", "False")]
    assert_allowed(released, reserved(reclaimable={"main": 2}))
    assert_allowed(reserved(), workload(reclaimable={"main": 2}))  # re-reserved after a release


# --- status.admission ------------------------------------------------------------------------------------


def test_admission_may_be_set_when_absent_and_cleared() -> None:
    assert_allowed(reserved(), workload())
    assert_allowed(workload(), reserved())
    # kept while an evicted workload's job stops, then cleared
    evicted = reserved()
    evicted["status"]["conditions"] = [condition("QuotaReserved", "False"), condition("Evicted")]
    assert_allowed(evicted, reserved())
    assert_allowed(workload(), evicted)


def test_admission_is_never_changed_in_place() -> None:
    other = copy.deepcopy(ADMISSION)
    other["clusterQueue"] = "other"
    assert_refused(workload(reserved=True, admission_=other), reserved(), f"status.admission: {IMMUTABLE}")
    flavor = copy.deepcopy(ADMISSION)
    flavor["podSetAssignments"][0]["flavors"] = {"cpu": "spot"}
    assert_refused(workload(reserved=True, admission_=flavor), reserved(), f"status.admission: {IMMUTABLE}")
    # whether or not quota is reserved: upstream checks the admission on every update
    assert_refused(workload(admission_=other), workload(admission_=copy.deepcopy(ADMISSION)),
                   f"status.admission: {IMMUTABLE}")


def test_admission_compares_quantities_by_value_and_lets_the_topology_assignment_change() -> None:
    same = copy.deepcopy(ADMISSION)
    same["podSetAssignments"][0]["resourceUsage"] = {"cpu": "2000m"}
    assert_allowed(workload(reserved=True, admission_=same), reserved())
    topology = copy.deepcopy(ADMISSION)
    topology["podSetAssignments"][0]["topologyAssignment"] = {"levels": ["host"], "slices": []}
    topology["podSetAssignments"][0]["delayedTopologyRequest"] = "Ready"
    assert_allowed(workload(reserved=True, admission_=topology), reserved())


# --- the request around the rules --------------------------------------------------------------------------


def test_v1beta1_objects_are_held_to_the_same_rules() -> None:
    v1 = "kueue.x-k8s.io/v1beta1"
    assert_refused(reserved(count=3, api_version=v1), reserved(api_version=v1), f"spec.podSets.0: {IMMUTABLE}")
    assert_allowed(reserved(reclaimable={"main": 1}, api_version=v1), reserved(api_version=v1))


def test_create_and_unreadable_old_objects_have_no_update_rules() -> None:
    new, old = reserved(count=3), reserved()
    assert admission.validate({"uid": "1", "operation": "CREATE", "object": new, "oldObject": old})["allowed"]
    broken = reserved()
    broken["spec"]["podSets"][0]["count"] = "three"
    assert_allowed(new, broken)
    assert admission.update_problems(new, None) == []


def test_the_rules_alone_in_the_api_layer() -> None:
    def read(obj: dict[str, Any]) -> Any:
        return read_workload(admission.clean(obj, keep_status=True))

    assert validation.workload_update(read(reserved(count=3, reclaimable={"main": 0})),
                                      read(reserved(reclaimable={"main": 1}))) == [
        ("spec.podSets.0", IMMUTABLE),
        ("status.reclaimablePods[main].count", "Invalid value: 0: cannot be less then 1"),
    ]
    assert read({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload"}) is None


@pytest.mark.parametrize("operation", ["UPDATE", "CREATE"])
def test_a_terminating_workload_is_never_held(operation: str) -> None:
    new = reserved(count=3)
    new["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert admission.validate({"uid": "1", "operation": operation, "object": new, "oldObject": reserved()})["allowed"]
