"""A pod group's Workload once every member failed, as upstream's pod integration (v0.17 source, the
nearest to v0.18 here) has it: ``FindMatchingWorkloads`` keeps the failed members (up to each role's
count), so the Workload still matches and is neither deleted nor finished; a retriable group waits
for replacement Pods (``WaitingForReplacementPods``, ``PodsFailed``) with its quota held. Only a group
marked ``retriable-in-group: "false"`` finishes once nothing of it is active: ``Finished`` reports
success with "Pods succeeded: 0/2." (upstream's ``Finished`` never sets success to false for a
group), and the members lose their finalizer. The Workload goes only with its last owner Pod."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs import framework
from pykueue.jobs.framework import Delete, Patch, WorkloadConditions
from pykueue.jobs.pod import groups as pods


def member(i: int, retriable: bool = True) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/pod-group-total-count": "2", "kueue.x-k8s.io/role-hash": "main"}
    if not retriable:
        annotations["kueue.x-k8s.io/retriable-in-group"] = "false"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "resourceVersion": "1",
                         "creationTimestamp": f"2026-01-01T00:00:0{i}Z", "finalizers": ["kueue.x-k8s.io/managed"],
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g",
                                    "kueue.x-k8s.io/managed": "true"},
                         "annotations": annotations},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Failed"}}


def admitted_workload() -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ns", "resourceVersion": "3",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": f"p{i}", "uid": f"u{i}"}
                                             for i in range(2)]},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2,
                                                     "template": {"spec": {"containers": [{"name": "c"}]}}}]},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2}]},
                       "conditions": [{"type": "QuotaReserved", "status": "True"},
                                      {"type": "Admitted", "status": "True"}]}}


def test_a_retriable_group_whose_members_all_failed_waits_for_replacements() -> None:
    actions = framework.reconcile(pods.PodGroup("ns", "g", [member(0), member(1)]), admitted_workload(), {})
    assert not any(isinstance(a, Delete) for a in actions)
    assert [a.conditions for a in actions if isinstance(a, WorkloadConditions)] == [
        (("WaitingForReplacementPods", True, "PodsFailed", "Some Failed pods need replacement"),)]
    waiting = copy.deepcopy(admitted_workload())
    waiting["status"]["conditions"].append({"type": "WaitingForReplacementPods", "status": "True",
                                            "reason": "PodsFailed", "message": "Some Failed pods need replacement"})
    assert framework.reconcile(pods.PodGroup("ns", "g", [member(0), member(1)]), waiting, {}) == []


def test_an_unretriable_group_whose_members_all_failed_finishes() -> None:
    waiting = copy.deepcopy(admitted_workload())
    waiting["status"]["conditions"].append({"type": "WaitingForReplacementPods", "status": "True",
                                            "reason": "PodsFailed", "message": "Some Failed pods need replacement"})
    group = pods.PodGroup("ns", "g", [member(0, retriable=False), member(1, retriable=False)])
    actions = framework.reconcile(group, waiting, {})
    assert [a.conditions for a in actions if isinstance(a, WorkloadConditions)] == [
        (("Finished", True, "Succeeded", "Pods succeeded: 0/2."),)]
    assert sorted(a.name for a in actions if isinstance(a, Patch) and a.kind == "Pod") == ["p0", "p1"]
    assert not any(isinstance(a, Delete) for a in actions)


def _preempted(i: int) -> dict[str, Any]:
    """A member stopped by its Workload's eviction: deleted (upstream's Stop), and failed once its
    container ended; Kueue's finalizer still on."""
    pod = member(i)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    return pod


def _unfinalized(actions: list[Any]) -> list[str]:
    return sorted(a.name for a in actions if isinstance(a, Patch) and a.kind == "Pod"
                  and "finalizers" in (a.body.get("metadata") or {}))


def test_preempted_members_keep_their_finalizer_until_replacements_make_the_group_whole() -> None:
    """Upstream's spec "should preempt a pod group" (pod_test.go): the preempted members stay (Failed,
    being deleted) until replacement Pods are created, and only then go. Before: they lost Kueue's
    finalizer at once, vanished, and the group's Workload, owned by them alone, was garbage-collected
    before the replacements could join it."""
    group = pods.PodGroup("ns", "g", [_preempted(0), _preempted(1)])
    assert _unfinalized(group.cleanup()) == []
    replacements = []
    for i in (2, 3):
        pod = member(i)
        pod["status"] = {"phase": "Pending"}
        pod["spec"]["schedulingGates"] = [{"name": pods.GATE}]
        replacements.append(pod)
    whole = pods.PodGroup("ns", "g", [_preempted(0), _preempted(1), *replacements])
    assert _unfinalized(whole.cleanup()) == ["p0", "p1"]
