"""The job side's Workload conditions are written by server-side apply under one field manager, which
drops what an apply leaves out: each write carries the other job-side conditions as they are."""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs.reconciler import JobReconciler
from pykueue.jobs.framework import WorkloadConditions

READY = {"type": "PodsReady", "status": "True", "reason": "Started", "message": "m",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}


def _reconciler(conditions: list[dict[str, Any]]) -> JobReconciler:
    workloads = {"ns/w": {"metadata": {"name": "w", "namespace": "ns"}, "status": {"conditions": [
        *conditions, {"type": "QuotaReserved", "status": "True"}]}}}
    return JobReconciler(None, None, workloads, {}, lambda: None, lambda: 1_800_000_000.0)  # type: ignore[arg-type]


def test_finishing_keeps_the_pods_ready_condition() -> None:
    written = _reconciler([READY])._conditions(WorkloadConditions("ns", "w", (("Finished", True, "Succeeded", "done"),)))
    assert written == [READY, {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
                               "lastTransitionTime": "2027-01-15T08:00:00Z"}]


def test_a_new_reason_with_the_same_status_keeps_the_transition_time() -> None:
    (written,) = _reconciler([READY])._conditions(WorkloadConditions(
        "ns", "w", (("PodsReady", True, "Recovered", "again"),)))
    assert (written["reason"], written["lastTransitionTime"]) == ("Recovered", "2026-01-01T00:00:00Z")
    (flipped,) = _reconciler([READY])._conditions(WorkloadConditions(
        "ns", "w", (("PodsReady", False, "WaitForRecovery", "failed"),)))
    assert flipped["lastTransitionTime"] == "2027-01-15T08:00:00Z"
