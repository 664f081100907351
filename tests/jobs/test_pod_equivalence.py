"""Pods and pod groups kept equivalent to their Workloads, as upstream's jobframework reconciler and pod
integration keep them (reconciler.go step 7 and UpdateWorkloadPriority; pod_controller.go
FindMatchingWorkloads and equivalentToWorkload for a group). Every expectation is worked out by hand
from those rules."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs.framework import CreateWorkload, Delete, Note, Patch, SetPriority
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod.workload import workload_from_pod
from tests.jobs.pod_objects import ADMITTED, ASSIGNED, FLAVORS, QUEUE
from tests.jobs.pod_objects import managed_pod as _pod
from tests.jobs.writes import reconcile

CLASS = "kueue.x-k8s.io/priority-class"


def _workload_of(pod: dict[str, Any], *conditions: dict[str, Any], admission: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The Workload the pod integration made for ``pod``, cached as the informer would hold it."""
    workload = workload_from_pod(pod)
    workload["metadata"].update({"name": pods.Pod(pod).workload_name(), "namespace": "ns", "uid": "wl-uid"})
    workload["status"] = {"conditions": list(conditions), **({"admission": admission} if admission else {})}
    return workload


def _relabelled(pod: dict[str, Any], **labels: str | None) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    for key, value in labels.items():
        key = {"queue": QUEUE, "klass": CLASS}[key]
        if value is None:
            pod["metadata"]["labels"].pop(key, None)
        else:
            pod["metadata"]["labels"][key] = value
    return pod


def _wpc(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}


# ---- a single Pod (and each of a Deployment's Pods) ------------------------------------------------------


def test_a_gated_pod_moved_to_another_queue_moves_its_workload_in_place() -> None:
    """Step 7: a suspended (gated) job's Workload not holding quota takes the job's queue; no new Workload."""
    pod = _pod()
    workload = _workload_of(pod)
    assert workload["spec"]["queueName"] == "lq"
    (patch, note) = reconcile(pods.Pod(_relabelled(pod, queue="other")), workload, FLAVORS)
    assert isinstance(patch, Patch) and (patch.kind, patch.name, patch.body) == (
        "Workload", workload["metadata"]["name"], {"spec": {"queueName": "other"}})
    assert isinstance(note, Note)
    assert reconcile(pods.Pod(pod), workload, FLAVORS) == []  # unchanged: nothing to do


def test_a_running_pods_queue_label_is_not_followed() -> None:
    """Released from the gate, a Pod keeps its queue (the webhook refuses the change); a Workload that
    holds quota is never moved."""
    pod = _pod(gated=False, phase="Running")
    workload = _workload_of(pod, *ADMITTED, admission=ASSIGNED)
    assert reconcile(pods.Pod(_relabelled(pod, queue="other")), workload, FLAVORS) == []


def test_a_pods_changed_priority_class_label_updates_its_workload_pending_or_running() -> None:
    """UpdateWorkloadPriority runs for every job whose Workload matches, gated or released."""
    for pod, conditions, admission in ((_pod(labels={CLASS: "low"}), (), None),
                                       (_pod(labels={CLASS: "low"}, gated=False, phase="Running"), ADMITTED, ASSIGNED)):
        workload = _workload_of(pod, *conditions, admission=admission)
        assert workload["spec"]["priorityClassRef"] == _wpc("low")
        (update, note) = reconcile(pods.Pod(_relabelled(pod, klass="high")), workload, FLAVORS)
        assert update == SetPriority("ns", workload["metadata"]["name"], "wl-uid", _wpc("high"))
        assert isinstance(note, Note) and note.fields["class"] == "high"
        assert not any(isinstance(a, SetPriority) for a in reconcile(pods.Pod(pod), workload, FLAVORS))


def test_a_class_added_to_a_gated_pod_is_followed() -> None:
    pod = _pod()
    workload = _workload_of(pod)
    (update, _) = reconcile(pods.Pod(_relabelled(pod, klass="high")), workload, FLAVORS)
    assert isinstance(update, SetPriority) and update.ref == _wpc("high")


# ---- pod groups: roles and counts (upstream's equivalentToWorkload for a group) ----------------------------


def _member(name: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
    return _pod(name, cpu=cpu, labels={pods.GROUP_NAME_LABEL: "g", **kwargs.pop("labels", {})},
                annotations={pods.GROUP_TOTAL_COUNT: "2"}, **kwargs)


def _group_workload(members: list[dict[str, Any]], *conditions: dict[str, Any]) -> dict[str, Any]:
    (created,) = reconcile(pods.PodGroup("ns", "g", members), None, FLAVORS)
    assert isinstance(created, CreateWorkload)
    workload = copy.deepcopy(created.manifest)
    workload["metadata"].update({"uid": "wl-uid", "resourceVersion": "11"})
    workload["status"] = {"conditions": list(conditions)}
    return workload


def test_roles_match_as_upstreams_group_equivalence() -> None:
    """Worked from equivalentToWorkload: roles are matched in order against the Workload's pod sets, each
    with no more members than its count; a finished Workload checks the roles only."""
    workload = {"spec": {"podSets": [{"name": "a", "count": 2}, {"name": "b", "count": 1}]}}
    assert pods.roles_match(workload, [("a", 2), ("b", 1)])
    assert pods.roles_match(workload, [("b", 1)])  # fewer roles: a subsequence
    assert pods.roles_match(workload, [("a", 1)])  # fewer members than counted
    assert not pods.roles_match(workload, [("a", 3)])  # more members than counted
    assert not pods.roles_match(workload, [("c", 1)])  # a role the Workload lacks
    assert not pods.roles_match(workload, [("b", 1), ("a", 1)])  # out of order
    assert not pods.roles_match(workload, [("a", 1), ("b", 1), ("c", 1)])  # more roles than pod sets
    finished = {**workload, "status": {"conditions": [{"type": "Finished", "status": "True"}]}}
    assert pods.roles_match(finished, [("a", 3)])
    assert not pods.roles_match(finished, [("c", 1)])


def test_a_pending_group_whose_members_all_changed_shape_gets_a_new_workload() -> None:
    """The members deleted and created again with 2 cpu each: none is of the Workload's role, so
    FindMatchingWorkloads keeps no member and the Workload is deleted, to be made for the group as it is."""
    workload = _group_workload([_member("a"), _member("b")])
    reshaped = pods.PodGroup("ns", "g", [_member("c", cpu="2"), _member("d", cpu="2")])
    actions = reconcile(reshaped, workload, FLAVORS)
    assert [(a.kind, a.name) for a in actions if isinstance(a, Delete)] == [("Workload", "g")]
    assert not any(isinstance(a, Patch) for a in actions)  # gated members: nothing to stop
    (created,) = reconcile(reshaped, None, FLAVORS)
    assert isinstance(created, CreateWorkload)
    assert [p["name"] for p in created.manifest["spec"]["podSets"]] == [pods.role_hash(_member("c", cpu="2")["spec"])]


def test_a_running_group_whose_members_are_of_no_role_of_its_workload_is_stopped() -> None:
    """Admitted for 1-cpu members; the members running now are 2-cpu ones (released by hand): stopped,
    the Workload deleted."""
    workload = _group_workload([_member("a"), _member("b")], *ADMITTED)
    role = workload["spec"]["podSets"][0]["name"]
    workload["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": [
        {"name": role, "count": 2, "flavors": {"cpu": "on-demand"}}]}
    running = [_member(n, cpu="2", gated=False, phase="Running") for n in ("c", "d")]
    actions = reconcile(pods.PodGroup("ns", "g", running), workload, FLAVORS)
    assert [(a.kind, a.name) for a in actions if isinstance(a, Delete)] == [("Pod", "c"), ("Pod", "d"), ("Workload", "g")]


def test_a_group_with_some_members_of_its_role_keeps_its_workload() -> None:
    """One member of the Workload's role and one of another: the first is kept, so the Workload matches;
    the other waits gated (no admitted role) and nothing is deleted."""
    workload = _group_workload([_member("a"), _member("b")])
    group = pods.PodGroup("ns", "g", [_member("a"), _member("x", cpu="2")])
    assert not any(isinstance(a, Delete) for a in reconcile(group, workload, FLAVORS))


def test_a_gated_group_moved_to_another_queue_moves_its_workload() -> None:
    members = [_member("a"), _member("b")]
    workload = _group_workload(members)
    moved = pods.PodGroup("ns", "g", [_relabelled(m, queue="other") for m in members])
    (patch, _) = reconcile(moved, workload, FLAVORS)
    assert isinstance(patch, Patch) and (patch.kind, patch.body) == ("Workload", {"spec": {"queueName": "other"}})


def test_a_groups_changed_priority_class_updates_its_workload() -> None:
    members = [_member("a", labels={CLASS: "low"}), _member("b", labels={CLASS: "low"})]
    workload = _group_workload(members)
    assert workload["spec"]["priorityClassRef"] == _wpc("low")
    (update, _) = reconcile(pods.PodGroup("ns", "g", [_relabelled(m, klass="high") for m in members]), workload, FLAVORS)
    assert update == SetPriority("ns", "g", "wl-uid", _wpc("high"))
    assert not any(isinstance(a, SetPriority) for a in reconcile(pods.PodGroup("ns", "g", members), workload, FLAVORS))
