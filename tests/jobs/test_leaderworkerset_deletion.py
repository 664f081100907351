"""A deleted LeaderWorkerSet's Pods lose Kueue's finalizer, so nothing of it is left behind.

Upstream's rules, outcomes worked out by hand:
- the LWS Pod reconciler (leaderworkerset_pod_reconciler.go) takes ``kueue.x-k8s.io/managed`` off any
  LWS Pod (the webhook's ``pod-suspending-parent`` mark) that is being deleted or has ended, reading only
  the Pod: its LWS may already be gone;
- the job reconciler stops a pod group whose Workload is being deleted with reason WorkloadDeleted, and
  the Pod integration's ``Stop`` for that reason deletes every member, ended ones too, and finalizes them
  all (pod_controller.go)."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.jobs.group_owners import GroupOwnerKeys, GroupOwnerReconciler
from pykueue.jobs.framework import Action, Delete, JobStopped, Patch, reconcile
from pykueue.jobs.leaderworkerset import INTEGRATION
from pykueue.jobs.leaderworkerset import workload as lws
from pykueue.jobs.pod import groups as pods
from tests.jobs.recorded import Writes, finalizer_patches

FINALIZER = "kueue.x-k8s.io/managed"
GONE = "2030-01-01T00:00:00Z"


def lws_pod(name: str, *, set_name: str = "infer", deleting: bool = False, phase: str = "Running",
            finalizers: tuple[str, ...] = (FINALIZER,)) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}", "resourceVersion": "7",
                            "creationTimestamp": f"2030-01-01T00:00:0{len(name) % 10}Z",
                            "labels": {lws.SET_NAME_LABEL: set_name, FINALIZER: "true"},
                            "annotations": {lws.SUSPENDED_BY_PARENT: lws.FRAMEWORK}, "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = GONE
    return {"metadata": meta, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": phase}}




def test_the_ending_pods_of_a_gone_lws_lose_the_finalizer() -> None:
    """LWS ml/infer is gone (not in the cache). Its leader Pod infer-0 is being deleted (another
    finalizer of someone else's stays), infer-1 has Failed, infer-0-1 still runs (not deleted: it keeps
    the finalizer, its group's rule decides), and other-0, being deleted, belongs to another LWS: only
    infer-0 and infer-1 are patched."""
    store = {f"ml/{p['metadata']['name']}": p for p in (
        lws_pod("infer-0", deleting=True, finalizers=(FINALIZER, "example.com/keep")),
        lws_pod("infer-1", phase="Failed"),
        lws_pod("infer-0-1"),
        lws_pod("other-0", set_name="other", deleting=True))}
    writes = Writes()
    reconciler = GroupOwnerReconciler(GroupOwnerKeys(INTEGRATION, {}, store), writes)  # type: ignore[arg-type]
    asyncio.run(reconciler.reconcile("ml/infer"))
    assert finalizer_patches(writes.done) == {"infer-0": ["example.com/keep"], "infer-1": None}


GROUP = "leaderworkerset-infer-0-abcde"


def member(name: str, role: str, **kw: Any) -> dict[str, Any]:
    """A member of group 0 of ml/infer, as LWS's Pod reconciler labelled it."""
    pod = lws_pod(name, **kw)
    pod["metadata"]["labels"].update({pods.GROUP_NAME_LABEL: GROUP, "kueue.x-k8s.io/prebuilt-workload-name": GROUP,
                                      "kueue.x-k8s.io/queue-name": "lq"})
    pod["metadata"]["annotations"].update({pods.GROUP_TOTAL_COUNT: "2", pods.ROLE_HASH: role,
                                           "kueue.x-k8s.io/pod-group-serving": "true"})
    return pod


def group_workload(*, reserved: bool) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": []}
    if reserved:
        status = {"admission": {"clusterQueue": "cq", "podSetAssignments": []}, "conditions": [
            {"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
    return {"metadata": {"name": GROUP, "namespace": "ml", "uid": "w1", "deletionTimestamp": GONE,
                         "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                         "annotations": {pods.IS_GROUP_WORKLOAD: "true"}},
            "spec": {"queueName": "lq", "podSets": [{"name": "leader", "count": 1}, {"name": "worker", "count": 1}]},
            "status": status}


def deleted(actions: list[Action]) -> list[str]:
    return sorted(a.name for a in actions if isinstance(a, Delete) and a.kind == "Pod")


def test_a_running_group_whose_admitted_workload_is_being_deleted_is_deleted_and_finalized() -> None:
    """The LWS was deleted: its leader infer-0 is being deleted while it runs, its worker infer-0-1 still
    runs, and the group's Workload (quota reserved) is being deleted. The worker is deleted with
    TerminationTarget reason WorkloadDeleted, both lose the finalizer; the quota is not yet released
    (the Pods still run)."""
    group = pods.PodGroup("ml", GROUP, [member("infer-0", "leader", deleting=True), member("infer-0-1", "worker")])
    actions = reconcile(group, group_workload(reserved=True), {})
    assert deleted(actions) == ["infer-0-1"]
    reasons = [c["reason"] for a in actions if isinstance(a, Patch) and a.subresource == "status"
               for c in a.body["status"]["conditions"]]
    assert reasons == [pods.WORKLOAD_DELETED]
    assert finalizer_patches(actions) == {"infer-0": None, "infer-0-1": None}
    assert not [a for a in actions if isinstance(a, JobStopped)]


def test_a_waiting_group_whose_workload_is_being_deleted_is_deleted_and_finalized() -> None:
    """Its Workload holds no quota: both members are still gated (ended ones are deleted too, as
    upstream's Stop for WorkloadDeleted); both are deleted and lose the finalizer."""
    gated = [member("infer-0", "leader"), member("infer-0-1", "worker", phase="Succeeded")]
    gated[0]["spec"]["schedulingGates"] = [{"name": pods.GATE}]
    group = pods.PodGroup("ml", GROUP, gated)
    actions = reconcile(group, group_workload(reserved=False), {})
    assert deleted(actions) == ["infer-0", "infer-0-1"]
    assert finalizer_patches(actions) == {"infer-0": None, "infer-0-1": None}


def test_once_the_group_is_gone_its_deleted_workloads_quota_goes() -> None:
    group = pods.PodGroup("ml", GROUP, [])
    actions = reconcile(group, group_workload(reserved=True), {})
    assert [type(a).__name__ for a in actions] == ["JobStopped"]
