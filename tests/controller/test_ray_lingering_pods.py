"""A Ray object's quota is held while its clusters' Pods may still run (issue 51, item 7 for Ray): KubeRay
reports a RayCluster ``suspended`` once it has asked for its Pods' deletion, and a RayJob ``Suspended``
once its RayCluster and submitter Job objects are gone (the garbage collector deletes their Pods
after them, each with its grace period), clearing the cluster's name from the RayJob's status. No
status counts those Pods, so before, the evicted Workload's quota went at that state and a preemptor
started beside Pods still terminating. Now the stopped job's ``JobStopped`` names the Pods to look
for (``lingering``): a suspended RayCluster's own (``ray.io/cluster``), a RayJob's clusters (the
live one, the cached ones it controls, and the deleted ones the controller remembers) and its
submitter's (``batch.kubernetes.io/job-name``); the controller lists them and reports the job stopped
only once none may run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.controller.jobs.reconciler import JobReconciler, ObjectKeys, PodsLinger
from pykueue.jobs.framework import JobStopped, reconcile
from pykueue.jobs.ray.generic import RayObject
from pykueue.jobs.registry import BY_KIND
from tests.jobs.test_ray_live import FLAVORS, admitted, raycluster, rayjob

NOW = 1_800_000_000.0


def _evicted(job: RayObject) -> dict[str, Any]:
    wl = admitted(job.workload_name(), [("head", "cpu", 1), ("small", "cpu", 2), ("big", "gpu", 1)])
    wl["spec"] = job.build_workload()["spec"]  # type: ignore[index]
    wl["status"]["conditions"].append({"type": "Evicted", "status": "True"})
    return wl


def test_a_suspended_rayclusters_stop_names_its_pods() -> None:
    job = RayObject({**raycluster(), "status": {"state": "suspended"}})
    (stopped,) = [a for a in reconcile(job, _evicted(job), FLAVORS) if isinstance(a, JobStopped)]
    assert stopped.lingering == ("ray.io/cluster=rc",)


def test_a_suspended_rayjobs_stop_names_every_cluster_it_had_and_its_submitter() -> None:
    """The RayJob's status no longer names its cluster (KubeRay cleared it); the controller's index of
    its children remembers the deleted ``rj-abcde``, and still caches ``rj-fghij`` (being deleted)."""
    store = {"ns/rj": rayjob(status={"jobDeploymentStatus": "Suspended"})}
    keys = ObjectKeys(BY_KIND["RayJob"], store, False)
    owner = [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "controller": True}]
    for name in ("rj-abcde", "rj-fghij"):
        keys.child({"metadata": {"namespace": "ns", "name": name, "ownerReferences": owner}}, deleted=False)
    keys.child({"metadata": {"namespace": "ns", "name": "rj-abcde", "ownerReferences": owner}}, deleted=True)
    job = keys.load("ns/rj")
    assert isinstance(job, RayObject)
    (stopped,) = [a for a in reconcile(job, _evicted(job), FLAVORS) if isinstance(a, JobStopped)]
    assert stopped.lingering == ("ray.io/cluster in (rj-abcde,rj-fghij)", "batch.kubernetes.io/job-name=rj")
    keys.released("ns/rj")  # once its quota is released, the deleted clusters are forgotten
    assert keys.load("ns/rj").lingering_pods() == ("ray.io/cluster in (rj-fghij)", "batch.kubernetes.io/job-name=rj")  # type: ignore[union-attr]


class Pods:
    """The Pods list the reconciler sends: ``pods`` answered for every selector; the queries recorded."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.queries: list[dict[str, Any]] = []

    async def list(self, res: Any, **query: Any) -> dict[str, Any]:
        self.queries.append(query)
        return {"items": self.pods}


def _pod(phase: str = "Running", deleting: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "rc-head", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = deleting
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize(("pods", "released"), [
    ([_pod()], False),  # running
    ([_pod(deleting="2027-01-15T08:00:30Z")], False),  # terminating, its grace period not over
    ([_pod(deleting="2027-01-15T07:59:00Z")], True),  # past its grace period: the kubelet has stopped it
    ([_pod(phase="Succeeded")], True),
    ([], True),
], ids=["running", "terminating", "past-grace", "ended", "gone"])
def test_the_quota_goes_only_once_none_of_its_pods_may_run(pods: list[dict[str, Any]], released: bool) -> None:
    stopped: list[str] = []
    api = Pods(pods)
    store = {"ns/rc": raycluster()}
    keys = ObjectKeys(BY_KIND["RayCluster"], store, False)
    # NOW is 2027-01-15T08:00:00Z
    sync = JobReconciler(api, keys, {}, FLAVORS, lambda: None, lambda: NOW, stopped.append)  # type: ignore[arg-type]
    action = JobStopped("ns", "rc", ("ray.io/cluster=rc",))
    if released:
        asyncio.run(sync.execute(action))
        assert stopped == ["ns/rc"]
    else:
        with pytest.raises(PodsLinger):
            asyncio.run(sync.execute(action))
        assert stopped == []  # held: the work queue brings the key back
    assert api.queries == [{"labelSelector": "ray.io/cluster=rc", "fieldSelector": "metadata.namespace=ns"}]
