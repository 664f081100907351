"""An admission-check entry the workload's ClusterQueue no longer has, while the workload holds quota:
the status apply carries it as the API shows it (left out, a co-owned entry loses the fields Kueue
wrote and the API server refuses the write; tests/cluster/test_check_entries_left_by_a_queue.py shows
the 422 live). Expected values written out by hand."""

from __future__ import annotations

from pykueue.controller.core.workload_status import WorkloadView, desired_status
from pykueue.engine import model
from pykueue.engine.workload import State

SPEC = model.Workload("ns", "w", "lq", (model.PodSet("main", 1, {"cpu": 1000}),))
ADMISSION = model.Admission("cq", (model.PodSetAssignment("main", 1, {"cpu": "default"}),))
EARLIER = "2026-01-01T00:00:00Z"
NOW = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"
LEFT = {"name": "gone", "state": "Ready", "lastTransitionTime": EARLIER, "message": "set by its controller"}


def _held(checks: dict[str, str]) -> WorkloadView:
    return WorkloadView(state=State.ADMITTED, cluster_queue="cq", admission=ADMISSION, reason=None, message="",
                        requeue_count=0, requeue_at=None, evictions=0, spec=SPEC, check_states=checks)


def _obj(*entries: dict[str, str]) -> dict:
    return {"metadata": {"name": "w", "namespace": "ns"}, "status": {"admissionChecks": list(entries)}}


def test_a_queue_with_no_checks_keeps_an_entry_the_workload_lists() -> None:
    assert desired_status(_held({}), _obj(LEFT), None, None, NOW)["admissionChecks"] == [LEFT]


def test_a_queue_with_other_checks_keeps_the_left_entry_beside_its_own() -> None:
    status = desired_status(_held({"kept": "Ready"}), _obj(LEFT), None, None, NOW)
    assert status["admissionChecks"] == [
        LEFT, {"name": "kept", "state": "Ready", "lastTransitionTime": STAMP, "message": ""}]


def test_a_queue_with_no_checks_and_no_entries_writes_no_list() -> None:
    assert "admissionChecks" not in desired_status(_held({}), _obj(), None, None, NOW)
