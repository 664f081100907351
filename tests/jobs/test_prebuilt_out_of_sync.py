"""A prebuilt Workload (``kueue.x-k8s.io/prebuilt-workload-name``) that no longer matches its job, as
upstream's reconciler takes it (jobframework/reconciler.go ``ensurePrebuiltWorkloadInSync``, then
``handleJobWithNoWorkload``; pod_controller.go ``EquivalentToWorkload`` for a group): the Workload is
finished ``OutOfSync`` and never deleted or replaced, and a job still running is stopped. For a pod
group the comparison is by roles only (the group's pod sets, in order, none with more members than it
counts). Every expectation is worked out by hand from those rules."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs.framework import Delete, Note, Patch, WorkloadConditions, reconcile
from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod.workload import workload_from_pod
from tests.jobs.pod_objects import ADMITTED, FLAVORS
from tests.jobs.pod_objects import managed_pod as _pod

OUT_OF_SYNC = ("Finished", True, "OutOfSync", "The prebuilt workload is out of sync with its user job")
GROUP = {pods.GROUP_NAME_LABEL: "g", PREBUILT_WORKLOAD_LABEL: "g"}


def _member(name: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
    return _pod(name, cpu=cpu, labels={**GROUP, **kwargs.pop("labels", {})},
                annotations={pods.GROUP_TOTAL_COUNT: "2"}, **kwargs)


def _made_for(cpu: str, count: int = 2, *conditions: dict[str, Any], limit: int | None = None) -> dict[str, Any]:
    """The group's Workload as its maker wrote it: one pod set of the role of a ``cpu`` member."""
    shape = _member("shape", cpu=cpu)
    workload = workload_from_pod(shape)
    workload["metadata"] = {"name": "g", "namespace": "ns", "uid": "wl-uid", "resourceVersion": "3",
                            "annotations": {pods.IS_GROUP_WORKLOAD: "true"}}
    workload["spec"]["podSets"][0].update({"name": pods.role_hash(shape["spec"]), "count": count})
    if limit is not None:
        workload["spec"]["maximumExecutionTimeSeconds"] = limit
    workload["status"] = {"conditions": list(conditions)}
    return workload


def _kinds(actions: list[Any]) -> list[tuple[str, str]]:
    return [(type(a).__name__, getattr(a, "kind", "") or "") for a in actions if not isinstance(a, Note)]


def test_a_prebuilt_group_of_its_workloads_role_is_adopted_not_finished() -> None:
    """Two 1-cpu members, the Workload counts two of their role: in sync; the members become its owners."""
    workload = _made_for("1")
    actions = reconcile(pods.PodGroup("ns", "g", [_member("a"), _member("b")]), workload, FLAVORS)
    assert not any(isinstance(a, (WorkloadConditions, Delete)) for a in actions)
    (owners,) = [a for a in actions if isinstance(a, Patch) and a.kind == "Workload"]
    assert [o["name"] for o in owners.body["metadata"]["ownerReferences"]] == ["a", "b"]


def test_a_gated_prebuilt_group_of_another_role_finishes_its_workload_out_of_sync() -> None:
    """The Workload was made for 1-cpu members, the members ask 2 cpu: no member has its role. Upstream
    finishes it OutOfSync (a group's own Workload would be deleted and made anew); gated members have
    nothing to stop."""
    workload = _made_for("1")
    actions = reconcile(pods.PodGroup("ns", "g", [_member("a", cpu="2"), _member("b", cpu="2")]), workload, FLAVORS)
    (finish,) = [a for a in actions if isinstance(a, WorkloadConditions)]
    assert (finish.name, finish.uid, finish.conditions) == ("g", "wl-uid", (OUT_OF_SYNC,))
    assert not any(isinstance(a, Delete) for a in actions)
    assert _kinds(actions) == [("WorkloadConditions", "")]


def test_a_prebuilt_group_with_excess_members_keeps_its_workload() -> None:
    """Three 1-cpu members released by hand, the Workload counts one: the group rule keeps the oldest
    (the other two are excess and deleted), and the kept one matches (1 member <= count 1): in sync,
    not finished."""
    workload = _made_for("1", 1, *ADMITTED)
    running = [_member(n, gated=False, phase="Running") for n in ("a", "b", "c")]
    actions = reconcile(pods.PodGroup("ns", "g", running), workload, FLAVORS)
    assert not any(isinstance(a, WorkloadConditions) for a in actions)
    assert sorted(a.name for a in actions if isinstance(a, Delete)) == ["b", "c"]


def test_a_running_prebuilt_group_out_of_sync_is_stopped_and_its_workload_kept() -> None:
    """Admitted for 1-cpu members, 2-cpu members run: finished OutOfSync and each running member
    stopped (TerminationTarget, deleted) for want of a matching Workload; the Workload is not deleted."""
    workload = _made_for("1", 2, *ADMITTED)
    running = [_member(n, cpu="2", gated=False, phase="Running") for n in ("c", "d")]
    actions = reconcile(pods.PodGroup("ns", "g", running), workload, FLAVORS)
    assert isinstance(actions[0], WorkloadConditions) and actions[0].conditions == (OUT_OF_SYNC,)
    assert [(a.kind, a.name) for a in actions if isinstance(a, Delete)] == [("Pod", "c"), ("Pod", "d")]
    reasons = [a.body["status"]["conditions"][0]["reason"] for a in actions
               if isinstance(a, Patch) and a.subresource == "status"]
    assert reasons == ["NoMatchingWorkload", "NoMatchingWorkload"]


def test_a_finished_out_of_sync_group_workload_finalizes_its_members() -> None:
    """Once finished, the usual rule for a finished Workload: the members lose Kueue's finalizer."""
    workload = _made_for("1", 2, {"type": "Finished", "status": "True", "reason": "OutOfSync"})
    actions = reconcile(pods.PodGroup("ns", "g", [_member("a", cpu="2"), _member("b", cpu="2")]), workload, FLAVORS)
    assert [(a.kind, a.name, a.body["metadata"]["finalizers"]) for a in actions if isinstance(a, Patch)] == [
        ("Pod", "a", None), ("Pod", "b", None)]


def test_a_prebuilt_groups_execution_limit_is_not_compared() -> None:
    """Upstream's group EquivalentToWorkload reads roles only: a prebuilt Workload whose limit the members'
    label does not name stays (a group's own Workload would be replaced for it)."""
    workload = _made_for("1", 2, limit=600)
    actions = reconcile(pods.PodGroup("ns", "g", [_member("a"), _member("b")]), workload, FLAVORS)
    assert not any(isinstance(a, (WorkloadConditions, Delete)) for a in actions)
    own = copy.deepcopy(workload)
    own_members = [_pod(n, labels={pods.GROUP_NAME_LABEL: "g"}, annotations={pods.GROUP_TOTAL_COUNT: "2"})
                   for n in ("a", "b")]
    assert [(a.kind, a.name) for a in reconcile(pods.PodGroup("ns", "g", own_members), own, FLAVORS)
            if isinstance(a, Delete)] == [("Workload", "g")]


def test_a_running_single_pod_out_of_sync_with_its_prebuilt_workload_is_stopped() -> None:
    """A released Pod asking 1 cpu, its prebuilt Workload 2: finished OutOfSync, the Pod stopped."""
    from pykueue.jobs import prebuilt

    pod = _pod(labels={PREBUILT_WORKLOAD_LABEL: "pre"}, gated=False, phase="Running")
    shaped = copy.deepcopy(pod)
    shaped["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    workload = workload_from_pod(shaped)
    workload["metadata"] = {"name": "pre", "namespace": "ns", "uid": "pre-uid", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}]}
    workload["status"] = {}
    actions = prebuilt.adopt(pods.Pod(pod), workload)
    assert actions is not None and isinstance(actions[0], WorkloadConditions)
    assert [(a.kind, a.name) for a in actions if isinstance(a, Delete)] == [("Pod", "p")]
    workload["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "OutOfSync"}]}
    again = prebuilt.adopt(pods.Pod(pod), workload)  # finished already, the Pod still running: stopped only
    assert again is not None and not any(isinstance(a, WorkloadConditions) for a in again)
    assert [(a.kind, a.name) for a in again if isinstance(a, Delete)] == [("Pod", "p")]
