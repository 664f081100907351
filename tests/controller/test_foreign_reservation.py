"""A reservation the engine did not make is adopted and counted (issue 51 item 3): on a 4 cpu
ClusterQueue, ``a`` (3 cpu) is admitted and ``b`` (3 cpu) waits; someone else (a stalled deposed leader,
another Kueue, a user's status patch) writes an admission onto ``b``, so its job may start. The engine
counts it where the admission says (6 cpu in use on 4), and ``c`` (1 cpu) is not admitted into what
looked free. Before: ``b`` stayed pending in the engine and ``c`` was admitted: 7 cpu ran on 4.
A reservation this controller wrote and has since taken back (its release still due) is not adopted."""

from __future__ import annotations

import copy

from pykueue.controller.core import views
from pykueue.engine.workload import State
from tests.controller.controllers import controller_with, modified, workload


def admission_on(obj: dict, cpu: str) -> dict:
    foreign = copy.deepcopy(obj)
    foreign["metadata"]["resourceVersion"] = "9"
    foreign["status"] = {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "by someone",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
                                                                  "flavors": {"cpu": "default"},
                                                                  "resourceUsage": {"cpu": cpu}}]}}
    return foreign


def test_an_admission_someone_else_wrote_is_counted_and_blocks_what_no_longer_fits() -> None:
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"))
    ctl.run_cycle()
    assert views.holds_quota(ctl.engine, "ns/a") and ctl.engine.state_of("ns/b") is State.PENDING
    ctl.status_writer.dirty.clear()  # a's reservation landed; nothing of b is due
    modified(ctl, admission_on(ctl.informers["workloads"].get("ns/b"), "3"))
    assert ctl.engine.state_of("ns/b") is State.ADMITTED
    assert ctl.engine.usage_of("cq")[("default", "cpu")] == 6000
    c = workload("c", "1")
    ctl.informers["workloads"].objects["ns/c"] = c  # type: ignore[attr-defined]
    ctl.on_workload("ADDED", None, c)
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/c") is State.PENDING


def test_a_reservation_whose_write_is_still_due_is_not_taken_for_someone_elses() -> None:
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"))
    ctl.run_cycle()
    assert "ns/b" in ctl.status_writer.dirty  # its pending answer is due: the API may lag the engine
    modified(ctl, admission_on(ctl.informers["workloads"].get("ns/b"), "3"))
    assert ctl.engine.state_of("ns/b") is State.PENDING


def test_a_reservation_someone_else_wrote_over_our_seen_pending_answer_is_still_adopted() -> None:
    """The writer had written ``b``'s pending answer and seen it in the cache (resourceVersion "5"); the
    foreign reservation changes that status, which the writer would write back over as another writer's
    change, and so look owed by it. Adoption comes first: ``b`` is counted. Found live (the first
    version of the cache comparison wrote the pending answer back and ``b``'s job never started)."""
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"))
    ctl.run_cycle()
    ctl.status_writer.dirty.clear()
    rec = ctl.status_writer.records.at("ns/b")
    rec.written = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m"}]}
    rec.written_version, rec.written_seen = "5", True
    modified(ctl, admission_on(ctl.informers["workloads"].get("ns/b"), "3"))
    assert ctl.engine.state_of("ns/b") is State.ADMITTED
