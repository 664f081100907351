"""The worker-lost wait is counted from an instant kept on the Workload (upstream's
``kueue.x-k8s.io/multikueue-worker-lost-since`` annotation), so a manager restarted during a worker's
outage waits only what was left of ``workerLostTimeout``, not the whole timeout again."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykueue.controller.multikueue.workloads import MultiKueueWorkloads
from pykueue.engine import model
from pykueue.engine import multikueue as mk

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
TIMEOUT = 20.0


def test_the_first_sight_of_a_lost_worker_is_recorded_and_waits_the_whole_timeout() -> None:
    lost = mk.lost_worker(None, NOW + 0.25, TIMEOUT)
    assert lost.record == NOW  # to the second, as RFC 3339 keeps it
    assert lost.wait == pytest.approx(19.75)  # counted from the recorded instant


def test_a_recorded_instant_is_only_waited_out() -> None:
    assert mk.lost_worker(NOW, NOW + 15, TIMEOUT) == mk.LostWorker(None, 5.0)
    assert mk.lost_worker(NOW, NOW + 25, TIMEOUT).wait == 0


class Store(SimpleNamespace):
    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)


class RecordingKube:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []

    async def merge_patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str,
                          subresource: str | None = None) -> None:
        self.patches.append((name, patch, subresource))


def _reconciler(annotations: dict[str, str], clusters: tuple[str, ...] = ("w1", "w2")
                ) -> tuple[MultiKueueWorkloads, RecordingKube, list[float]]:
    """A reconciler made from scratch (as after a restart) over a Ready workload reserved on w1, which is
    not connected (and in the MultiKueueConfig's ``clusters``)."""
    workload = {"metadata": {"name": "wl", "namespace": "ns", "resourceVersion": "7", "uid": "u",
                             "annotations": annotations,
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                                  "controller": True}]},
                "spec": {},
                "status": {"clusterName": "w1",
                           "conditions": [{"type": t, "status": "True"} for t in ("QuotaReserved", "Admitted")],
                           "admissionChecks": [{"name": "mk", "state": "Ready", "message": "m"}]}}
    job = {"metadata": {"name": "j", "namespace": "ns"}, "spec": {"managedBy": mk.CONTROLLER_NAME}}
    informers = {
        "workloads": Store(store={"ns/wl": workload}),
        "jobs": Store(store={"ns/j": job}),
        "admissionchecks": Store(store={"mk": {"spec": {"controllerName": mk.CONTROLLER_NAME, "parameters": {
            "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mkc"}}}}),
        "multikueueconfigs": Store(store={"mkc": {"spec": {"clusters": list(clusters)}}}),
    }
    workers = SimpleNamespace(workers={}, origin="o", usable=lambda name: None)
    kube = RecordingKube()
    config = model.MultiKueue(worker_lost_timeout_seconds=TIMEOUT)
    rec = MultiKueueWorkloads(kube, informers, workers, config, SimpleNamespace(emit=lambda *a: None),  # type: ignore[arg-type]
                              clock=lambda: NOW + 15)
    waits: list[float] = []
    rec.work.add_after = lambda key, delay: waits.append(delay)  # type: ignore[method-assign]
    return rec, kube, waits


def test_a_restarted_manager_waits_only_what_was_left() -> None:
    rec, kube, waits = _reconciler({mk.WORKER_LOST_SINCE_ANNOTATION: "2027-01-15T08:00:00Z"})
    asyncio.run(rec.reconcile("ns/wl"))
    assert waits == [pytest.approx(5.0)]
    assert kube.patches == []  # the instant is already there: nothing written


def test_the_first_sight_writes_the_instant_on_the_workload() -> None:
    rec, kube, waits = _reconciler({})
    asyncio.run(rec.reconcile("ns/wl"))
    assert waits == [pytest.approx(TIMEOUT)]
    assert kube.patches == [("wl", {"metadata": {"annotations": {
        mk.WORKER_LOST_SINCE_ANNOTATION: "2027-01-15T08:00:15Z"}}}, None)]


def test_an_unreadable_instant_is_recorded_anew() -> None:
    for bad in ("yesterday", "2027-01-15T08:00:00"):  # the second has no zone: not RFC 3339
        rec, kube, waits = _reconciler({mk.WORKER_LOST_SINCE_ANNOTATION: bad})
        asyncio.run(rec.reconcile("ns/wl"))
        assert waits == [pytest.approx(TIMEOUT)]
        assert kube.patches[0][1]["metadata"]["annotations"] == {mk.WORKER_LOST_SINCE_ANNOTATION: "2027-01-15T08:00:15Z"}


def test_past_the_timeout_the_check_turns_retry() -> None:
    rec, kube, waits = _reconciler({mk.WORKER_LOST_SINCE_ANNOTATION: "2027-01-15T07:59:00Z"})
    asyncio.run(rec.reconcile("ns/wl"))
    assert waits == []
    [(name, patch, sub)] = kube.patches
    assert sub == "status" and patch["status"]["admissionChecks"][0]["state"] == "Retry"
    assert patch["status"]["admissionChecks"][0]["message"] == "Reserving remote lost"


def test_a_reserving_worker_removed_from_the_config_is_given_up_at_once() -> None:
    """Upstream lists only the config's clusters as unavailable: one that left it is no lost worker to
    wait for, so the check turns Retry now, whatever the annotation says."""
    rec, kube, waits = _reconciler({}, clusters=("w2",))
    asyncio.run(rec.reconcile("ns/wl"))
    assert waits == []
    [(name, patch, sub)] = kube.patches
    assert patch["status"]["admissionChecks"][0]["state"] == "Retry"
    assert patch["status"]["admissionChecks"][0]["message"] == "Reserving remote no longer exists or is not admitted"
