"""A reservation the engine gives back without an event is released before the quota it freed is
reserved again (issue 51, item 8): a 3-cpu Workload ``a`` holds its reservation on the 4-cpu
ClusterQueue while its admission check is pending; then its LocalQueue is deleted, or its
ClusterQueue is held (``stopPolicy: Hold``). Upstream's workload controller unsets the reservation;
the engine does too, but none of its events says so (simulate's fixed event types have none for it),
so the status writer learned of it only at its pending-message sweep, up to 5 s later. Meanwhile a
3-cpu ``b`` of another LocalQueue reserved the freed quota and its write went out: the API showed
6 cpu reserved on 4. Now the release is due before the pass that reserves ``b``, and the writer's
one pass writes it first."""

from __future__ import annotations

import asyncio
import copy

from pykueue.controller.core import views
from pykueue.controller.manager import Controller
from pykueue.engine.workload import State
from pykueue.kube import resources as r
from tests.controller.controllers import controller_with, kueue, modified, sync, workload
from tests.controller.fakes import FakeKube, stop, until


def _with_a_check_pending() -> Controller:
    """``a`` (3 cpu) reserved on ``cq`` and shown so by the API; its check pending; ``b`` (3 cpu) queued
    in LocalQueue ``other`` of the same ClusterQueue, waiting for quota."""
    other = workload("b", "3")
    other["spec"]["queueName"] = "other"
    ctl, _ = controller_with(workload("a", "3"))
    ctl.informers["admissionchecks"] = type(ctl.informers["clusterqueues"])({})  # type: ignore[call-arg]
    sync(ctl, r.ADMISSION_CHECK, "check", kueue("AdmissionCheck", "check", {"controllerName": "x"}))
    cq = ctl.informers["clusterqueues"].objects["cq"]  # type: ignore[attr-defined]
    sync(ctl, r.CLUSTER_QUEUE, "cq", {**cq, "spec": {
        **cq["spec"], "admissionChecksStrategy": {"admissionChecks": [{"name": "check"}]}}})
    sync(ctl, r.LOCAL_QUEUE, "ns/other", kueue("LocalQueue", "other", {"clusterQueue": "cq"}, "ns"))
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/a") is State.QUOTA_RESERVED
    shown = copy.deepcopy(ctl.informers["workloads"].get("ns/a"))  # the API shows a's reservation
    shown["metadata"]["resourceVersion"] = "2"
    shown["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                       "message": "Quota reserved in ClusterQueue cq",
                                       "lastTransitionTime": "2026-01-01T00:00:01Z"}],
                       "admission": {"clusterQueue": "cq", "podSetAssignments": [
                           {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}, "count": 1}]}}
    modified(ctl, shown)
    ctl.status_writer.dirty.clear()  # a's reservation was written and landed
    ctl.status_writer.records.at("ns/a").written = copy.deepcopy(shown["status"])
    ctl.informers["workloads"].objects["ns/b"] = other  # type: ignore[attr-defined]
    ctl.on_workload("ADDED", None, other)
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/b") is State.PENDING  # 3 + 3 > 4
    return ctl


def _written_in_order(ctl: Controller) -> FakeKube:
    kube = FakeKube()
    ctl.status_writer.kube = kube  # type: ignore[assignment]

    async def scenario() -> None:
        task = asyncio.create_task(ctl.status_writer.run())
        await until(lambda: not ctl.status_writer.dirty and bool(kube.calls))
        await stop(task)

    asyncio.run(scenario())
    return kube


def test_a_reservation_given_back_for_a_deleted_local_queue_is_released_before_its_quota_is_reserved_again() -> None:
    ctl = _with_a_check_pending()
    sync(ctl, r.LOCAL_QUEUE, "ns/lq", None)
    assert not views.holds_quota(ctl.engine, "ns/a")  # the engine gave a's reservation back
    ctl.run_cycle()
    assert views.holds_quota(ctl.engine, "ns/b")
    assert "ns/a" in ctl.status_writer.dirty  # due now, not at the sweep
    kube = _written_in_order(ctl)
    assert kube.calls == ["a", "b"]  # the release first, then the reservation of the quota it freed
    released, reserved = kube.applied
    assert not released["status"].get("admission")
    assert next(c for c in released["status"]["conditions"] if c["type"] == "QuotaReserved")["status"] == "False"
    assert reserved["status"]["admission"]["clusterQueue"] == "cq"


def test_a_reservation_given_back_for_a_held_queue_is_released_at_once() -> None:
    """``stopPolicy: Hold`` cancels a reservation still waiting for its checks (upstream's workload
    controller): its release is written in the next pass of the writer (the quota it frees may be
    lent to the cohort at once), not at the sweep."""
    ctl = _with_a_check_pending()
    cq = ctl.informers["clusterqueues"].objects["cq"]  # type: ignore[attr-defined]
    sync(ctl, r.CLUSTER_QUEUE, "cq", {**cq, "spec": {**cq["spec"], "stopPolicy": "Hold"}})
    assert not views.holds_quota(ctl.engine, "ns/a")
    ctl.run_cycle()
    assert "ns/a" in ctl.status_writer.dirty
    kube = _written_in_order(ctl)
    assert kube.calls[0] == "a"
    (released, *_) = kube.applied
    assert not released["status"].get("admission")
