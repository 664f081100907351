"""Rows of `pykueue get workloads` read off Workload objects, without a cluster: a workload that was
admitted, evicted and waits again shows no EXEC TIME (kueuectl counts it from a current Admitted=True
condition only), and one admitted now shows the time since its admission."""

from __future__ import annotations

from datetime import UTC, datetime

from pykueue.kubectl.tables import workload_row

AT = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def wl(*conditions: tuple[str, str, str]) -> dict:
    return {
        "metadata": {"name": "w", "namespace": "a", "creationTimestamp": "2026-01-01T11:50:00Z"},
        "spec": {"queueName": "q"},
        "status": {"conditions": [{"type": t, "status": s, "lastTransitionTime": since} for t, s, since in conditions]},
    }


def test_a_pending_workload_admitted_before_shows_no_exec_time() -> None:
    # admitted at 11:52, preempted at 11:55: Admitted went False then, QuotaReserved too
    evicted = wl(("QuotaReserved", "False", "2026-01-01T11:55:00Z"), ("Admitted", "False", "2026-01-01T11:55:00Z"),
                 ("Evicted", "True", "2026-01-01T11:55:00Z"))
    row = workload_row(evicted, "cq", 0, AT, wide=False)
    assert row[5:8] == ["PENDING", "0", ""]  # STATUS, POSITION IN QUEUE, EXEC TIME
    assert row[8] == "10m"  # AGE


def test_an_admitted_workload_shows_the_time_since_its_admission() -> None:
    admitted = wl(("QuotaReserved", "True", "2026-01-01T11:52:00Z"), ("Admitted", "True", "2026-01-01T11:52:00Z"))
    row = workload_row(admitted, "cq", None, AT, wide=False)
    assert row[5:8] == ["ADMITTED", "", "8m"]
