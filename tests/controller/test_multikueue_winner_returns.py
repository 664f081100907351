"""A worker lost while it ran a workload's copy comes back after the workload was admitted again through
another worker, its old copy still admitted: that copy was admitted first, so it is the reserving one
(upstream's bestMatchByCondition) and the other is removed; but ``status.clusterName`` is immutable
once set, so the manager's Workload keeps naming the other worker, its check is not rewritten, and the
reconcile fails (and is retried) with upstream's error, while the returned worker's Job is mirrored."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykueue.controller.multikueue.workloads import ClusterNameTaken, MultiKueueWorkloads
from pykueue.engine import model
from pykueue.engine import multikueue as mk

READY, PENDING, RETRY, REJECTED = (model.CheckState.READY, model.CheckState.PENDING, model.CheckState.RETRY,
                                   model.CheckState.REJECTED)


def test_a_workload_with_no_cluster_name_records_the_winner() -> None:
    assert mk.reserving(PENDING, None, "w1") == mk.Reserving(True)


def test_a_ready_workload_naming_the_winner_has_nothing_new() -> None:
    assert mk.reserving(READY, "w1", "w1") == mk.Reserving(False)


def test_a_ready_workload_naming_another_worker_is_refused() -> None:
    assert mk.reserving(READY, "w2", "w1") == mk.Reserving(
        False, 'attempting to change immutable ClusterName from "w2" to "w1"')


def test_a_retry_or_rejected_check_is_not_written() -> None:
    for state in (RETRY, REJECTED):
        assert mk.reserving(state, None, "w1") == mk.Reserving(False)
        assert mk.reserving(state, "w2", "w1") == mk.Reserving(False)


class Store(SimpleNamespace):
    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)


class RecordingKube:
    def __init__(self, name: str, log: list[tuple[str, ...]]) -> None:
        self.name, self.log = name, log
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []

    async def merge_patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str,
                          subresource: str | None = None) -> None:
        self.patches.append((f"{res.plural}/{name}", patch, subresource))

    async def delete(self, res: Any, name: str, namespace: str) -> None:
        self.log.append(("delete", self.name, res.plural, name))

    async def create(self, res: Any, obj: dict[str, Any], namespace: str) -> None:
        self.log.append(("create", self.name, res.plural, obj["metadata"]["name"]))


def _remote(admitted_at: str, succeeded: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A worker's copy (admitted at ``admitted_at``) and its Job (``succeeded`` pods so far)."""
    wl = {"metadata": {"name": "wl", "namespace": "ns"}, "spec": {},
          "status": {"conditions": [{"type": t, "status": "True", "lastTransitionTime": admitted_at}
                                    for t in ("QuotaReserved", "Admitted")]}}
    job = {"metadata": {"name": "j", "namespace": "ns", "labels": {mk.PREBUILT_WORKLOAD_LABEL: "wl"}},
           "status": {"active": 1, "succeeded": succeeded}}
    return wl, job


def _reconciler(state: str, cluster_name: str | None, lost_again: bool = False
                ) -> tuple[MultiKueueWorkloads, RecordingKube, list[tuple[str, ...]], list[str]]:
    """The manager's Workload, holding quota (its check ``state``, naming ``cluster_name``), and two connected
    workers: w1 holding the copy admitted at 08:00 (the lost worker, back), w2 the one admitted at
    08:01:30 (after the workload was given up and requeued)."""
    held = ("QuotaReserved", "Admitted") if state == READY else ("QuotaReserved",)  # Admitted only once Ready
    status: dict[str, Any] = {"conditions": [{"type": t, "status": "True"} for t in held],
                              "admissionChecks": [{"name": "mk", "state": state,
                                                   "message": 'The workload got reservation on "w2"'}]}
    if cluster_name is not None:
        status["clusterName"] = cluster_name
    workload = {"metadata": {"name": "wl", "namespace": "ns", "resourceVersion": "7", "uid": "u",
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                                  "controller": True}]},
                "spec": {}, "status": status}
    job = {"metadata": {"name": "j", "namespace": "ns", "resourceVersion": "3"},
           "spec": {"managedBy": mk.CONTROLLER_NAME, "suspend": False}, "status": {"active": 1}}
    informers = {
        "workloads": Store(store={"ns/wl": workload}),
        "jobs": Store(store={"ns/j": job}),
        "admissionchecks": Store(store={"mk": {"spec": {"controllerName": mk.CONTROLLER_NAME, "parameters": {
            "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mkc"}}}}),
        "multikueueconfigs": Store(store={"mkc": {"spec": {"clusters": ["w1", "w2"]}}}),
    }
    log: list[tuple[str, ...]] = []
    workers = {}
    for name, (wl, remote_job) in {"w1": _remote("2027-01-15T08:00:00Z", 3),
                                  "w2": _remote("2027-01-15T08:01:30Z", 0)}.items():
        workers[name] = SimpleNamespace(kube=RecordingKube(name, log), informers={
            "workloads": Store(store={"ns/wl": wl}), "jobs": Store(store={"ns/j": remote_job})})
    if lost_again:  # w1 unreachable once more, and w2's copy already removed
        workers.pop("w1")
        workers["w2"].informers["workloads"].store.clear()
        workers["w2"].informers["jobs"].store.clear()
    pool = SimpleNamespace(workers=workers, origin="o", usable=workers.get)
    kube = RecordingKube("manager", log)
    events: list[str] = []
    rec = MultiKueueWorkloads(kube, informers, pool, model.MultiKueue(),  # type: ignore[arg-type]
                              SimpleNamespace(emit=lambda obj, reason, message: events.append(message)),  # type: ignore[arg-type]
                              clock=lambda: 1_800_000_200.0)
    return rec, kube, log, events


def test_the_returned_workers_older_copy_runs_on_and_cluster_name_stays() -> None:
    rec, kube, log, events = _reconciler(READY, "w2")
    with pytest.raises(ClusterNameTaken, match='from "w2" to "w1"'):
        asyncio.run(rec.reconcile("ns/wl"))
    # w2's objects removed (its Job, then its copy); nothing of w1's
    assert log == [("delete", "w2", "jobs", "j"), ("delete", "w2", "workloads", "wl")]
    # the manager's Job mirrors w1's; the Workload's status (clusterName, check) is not written
    assert kube.patches == [("jobs/j", {"metadata": {"resourceVersion": "3"}, "status": {"succeeded": 3}},
                             "status")]
    assert events == []


def test_a_workload_not_yet_recorded_takes_the_first_admitted_copy() -> None:
    """The same two copies seen while the check is still Pending: w1's is recorded (control case)."""
    rec, kube, log, events = _reconciler(PENDING, None)
    asyncio.run(rec.reconcile("ns/wl"))
    assert log == [("delete", "w2", "jobs", "j"), ("delete", "w2", "workloads", "wl")]
    [_, (name, patch, sub)] = kube.patches
    assert (name, sub) == ("workloads/wl", "status")
    assert patch["status"]["clusterName"] == "w1" and patch["status"]["nominatedClusterNames"] is None
    assert patch["status"]["admissionChecks"][0]["state"] == READY
    assert events == ['The workload got reservation on "w1"']


def test_the_returned_worker_lost_again_is_given_up_at_once() -> None:
    """No admitted copy is seen and the worker ``clusterName`` names (w2) answers: the reservation is
    gone, so the check turns Retry now, with no worker-lost wait (upstream's reachable branch)."""
    rec, kube, log, events = _reconciler(READY, "w2", lost_again=True)
    waits: list[float] = []
    rec.work.add_after = lambda key, delay: waits.append(delay)  # type: ignore[method-assign]
    asyncio.run(rec.reconcile("ns/wl"))
    assert waits == [] and log == []
    [(name, patch, sub)] = kube.patches
    assert (name, sub) == ("workloads/wl", "status")
    assert patch["status"]["admissionChecks"][0]["state"] == RETRY
    assert patch["status"]["admissionChecks"][0]["message"] == "Reserving remote no longer exists or is not admitted"


def test_a_copy_whose_priority_is_no_longer_the_managers_gets_it() -> None:
    """Upstream's spec (multikueue e2e_test.go :1210): the job's priority class changed, so the manager's
    Workload has a new priority; each worker's copy is updated with it (upstream updates out-of-sync
    remotes). Before: a copy was never written after its creation."""
    rec, kube, log, events = _reconciler(PENDING, None)
    local = rec.informers["workloads"].store["ns/wl"]
    local["spec"].update(priority=5000, priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                         "name": "high"})
    asyncio.run(rec.reconcile("ns/wl"))
    synced = [(w, p) for w in ("w1", "w2") for (name, p, _) in rec.workers.workers[w].kube.patches
              if name == "workloads/wl"]
    assert synced == [(w, {"spec": {"priority": 5000, "priorityClassRef": {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}}}) for w in ("w1", "w2")]
