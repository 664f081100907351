"""What the status writer sends for a pending workload, driven through the controller's own handlers
with an API stand-in that records the server-side applies (the e2e tests cover the real server)."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.core import views
from pykueue.engine.workload import State
from tests.controller.controllers import controller_with, modified, quota_reserved, workload


def test_a_release_after_eviction_is_written_in_the_engines_words() -> None:
    """An admitted workload evicted and not tried since has no answer of its own, but the API shows
    it holding quota: the release goes out, and its QuotaReserved=False does not repeat the words of
    the reservation it takes back."""
    ctl, kube = controller_with(workload("a", "3"))
    ctl.run_cycle()
    asyncio.run(ctl.status_writer.write("ns/a"))
    assert quota_reserved(kube.applied[-1])["status"] == "True"
    ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
    ctl.engine.job_stopped("ns/a", ctl.now_us() + 2)  # a bare Workload: nothing of it runs
    assert ctl.engine.state_of("ns/a") is State.PENDING and not ctl.engine.has_own_answer("ns/a")
    asyncio.run(ctl.status_writer.write("ns/a"))
    released = quota_reserved(kube.applied[-1])
    assert released["status"] == "False"
    assert "Quota reserved" not in released["message"] and released["reason"] != "QuotaReserved", released


def test_an_evicted_workload_whose_job_still_runs_keeps_its_reservation_in_the_api() -> None:
    """Evicted while its job still runs (State.STOPPING): the API keeps the admission and
    QuotaReserved=True, says Evicted=True, and keeps Admitted as it was; the release follows the stop."""
    ctl, kube = controller_with(workload("a", "3"))
    ctl.run_cycle()
    asyncio.run(ctl.status_writer.write("ns/a"))
    ctl.informers["workloads"].objects["ns/a"] = {**workload("a", "3"), "status": kube.applied[-1]["status"]}  # type: ignore[attr-defined]
    ctl.engine.evict("ns/a", "PodsReadyTimeout", ctl.now_us() + 1, message="Exceeded the PodsReady timeout ns/a")
    ctl.run_cycle()  # the eviction's event reaches the writer
    assert ctl.engine.state_of("ns/a") is State.STOPPING
    asyncio.run(ctl.status_writer.write("ns/a"))
    status = kube.applied[-1]["status"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert status["admission"]["clusterQueue"] == "cq"
    assert conditions["QuotaReserved"] == ("True", "QuotaReserved")
    assert conditions["Admitted"] == ("True", "Admitted")
    assert conditions["Evicted"] == ("True", "PodsReadyTimeout")
    ctl.engine.job_stopped("ns/a", ctl.now_us() + 2)
    asyncio.run(ctl.status_writer.write("ns/a"))
    status = kube.applied[-1]["status"]
    assert "admission" not in status and quota_reserved(kube.applied[-1])["status"] == "False"


def test_only_the_tried_workload_of_two_equals_is_written() -> None:
    """Two equal 6 cpu workloads on a 4 cpu queue: one is tried and told why; its equal is set aside
    untried and gets no write at all."""
    ctl, kube = controller_with(workload("a", "6"), workload("b", "6"))
    ctl.run_cycle()
    for key in ("ns/a", "ns/b"):
        asyncio.run(ctl.status_writer.write(key))
    assert len(kube.applied) == 1
    told = kube.applied[0]
    assert "insufficient" in quota_reserved(told)["message"]
    assert {ctl.engine.has_own_answer("ns/a"), ctl.engine.has_own_answer("ns/b")} == {True, False}


def test_a_new_spec_generation_is_read_and_a_status_update_is_not_converted_again() -> None:
    """A pending 6 cpu Workload on a 4 cpu queue is edited to ask for 2 cpu (generation 2): the engine
    takes the new pod sets and admits it. A status-only update (same generation) is not converted."""
    ctl, _ = controller_with(workload("a", "6"))
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/a") is State.PENDING
    status_only = {**workload("a", "6"), "status": {"conditions": []}}
    converted = dict(ctl.workload_sync.converted)
    modified(ctl, status_only)
    assert ctl.workload_sync.converted == converted  # nothing converted for a status update
    edited = workload("a", "2")
    edited["metadata"]["generation"] = 2
    modified(ctl, edited)
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/a") is State.ADMITTED
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 2000}


def test_an_invalid_workload_that_holds_quota_stays_counted() -> None:
    """A Workload whose spec fails validation (count -1) while its status holds 3 cpu in cq: the
    controller reports it invalid and still counts the 3 cpu, so a 2 cpu workload cannot start beside
    it on the 4 cpu queue."""
    bad = workload("bad", "1")
    bad["spec"]["podSets"][0]["count"] = -1
    bad["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
                     "admission": {"clusterQueue": "cq", "podSetAssignments": [
                         {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}}]}}
    ctl, kube = controller_with(bad, workload("next", "2"))
    ctl.run_cycle()
    assert ctl.records.get("ns/bad").invalid
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 3000}
    assert ctl.engine.state_of("ns/next") is State.PENDING
    asyncio.run(ctl.status_writer.write("ns/bad"))
    assert kube.applied == []  # its recorded admission is left as the API has it


def test_an_invalid_workloads_stand_in_evicted_is_told_with_its_recorded_admission_kept() -> None:
    """The invalid Workload holding 3 cpu evicted by the engine (a preemption victim): Evicted=True is
    written (its job must stop before its quota goes) with the admission as the API records it, never
    the stand-in's; QuotaReserved stays True until the stop is seen."""
    bad = workload("bad", "1")
    bad["spec"]["podSets"][0]["count"] = -1
    admission = {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}}]}
    since = "2026-01-01T00:00:00Z"
    bad["status"] = {"conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": since},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": since}],
                     "admission": admission}
    ctl, kube = controller_with(bad)
    ctl.run_cycle()
    ctl.engine.evict("ns/bad", "Preempted", ctl.now_us() + 1, message="Preempted to accommodate a workload")
    ctl.run_cycle()  # the eviction's event reaches the writer
    assert ctl.engine.state_of("ns/bad") is State.STOPPING
    asyncio.run(ctl.status_writer.write("ns/bad"))
    status = kube.applied[-1]["status"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions["Evicted"] == ("True", "Preempted")
    assert conditions["QuotaReserved"] == ("True", "QuotaReserved")
    assert status["admission"] == admission
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 3000}  # held until its job is seen stopped


def test_a_failure_inside_the_engine_rebuilds_it_from_the_caches(monkeypatch: Any) -> None:
    """A scheduling pass that raises (a bug) leaves the engine rebuilt from the informer caches, as a
    restart would: the admitted workload is admitted again from its recorded admission, counted once."""
    ctl, kube = controller_with(workload("a", "3"))
    ctl.run_cycle()
    asyncio.run(ctl.status_writer.write("ns/a"))
    ctl.informers["workloads"].objects["ns/a"] = {**workload("a", "3"), "status": kube.applied[-1]["status"]}  # type: ignore[attr-defined]
    broken = ctl.engine

    def bug(engine: Any) -> bool:
        raise RuntimeError("a bug")
    monkeypatch.setattr(views, "has_candidates", bug)  # fails inside the pass (an engine may be compiled)

    async def one_pass() -> None:
        ctl.kick()
        await ctl.schedule_loop()
    try:
        asyncio.run(one_pass())
    except RuntimeError as exc:
        assert str(exc) == "a bug"
    assert ctl.rebuilds == 1 and ctl.engine is broken  # the same object, its state made anew
    assert ctl.engine.state_of("ns/a") is State.ADMITTED
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 3000}
