"""The Workload status the admission side writes (`desired_status`), for each state a workload goes
through, against what upstream's scheduler and workload controller write; every expected value is
written out by hand."""

from __future__ import annotations

import dataclasses
from typing import Any

from pykueue.controller.core.workload_status import (
    Eviction,
    WorkloadView,
    apply_body,
    comparable,
    desired_status,
)
from pykueue.engine import model
from pykueue.engine.workload import State

NOW = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"  # NOW, as Kubernetes stamps it
EARLIER = "2026-01-01T00:00:00Z"
SPEC = model.Workload("ns", "w", "lq", (model.PodSet("main", 2, {"cpu": 1500, "memory": 2**30}),))
ADMISSION = model.Admission("cq", (model.PodSetAssignment("main", 2, {"cpu": "default", "memory": "default"}),))
PREEMPTED = Eviction("Preempted", "Preempted to accommodate a workload (UID: uid-p, JobUID: job-p) due to "
                     "prioritization in the ClusterQueue", preemption_reason="InClusterQueue")


def view(state: State, **changes: Any) -> WorkloadView:
    holds = state in (State.QUOTA_RESERVED, State.ADMITTED)
    base = WorkloadView(state=state, cluster_queue="cq", admission=ADMISSION if holds else None, reason=None,
                        message="", requeue_count=0, requeue_at=None, evictions=0, spec=SPEC, check_states={})
    return dataclasses.replace(base, **changes)


def obj(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", "generation": 2}, "status": status}


def cond(kind: str, status: str, reason: str, message: str, since: str = STAMP) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since,
            "observedGeneration": 2}


def test_a_pending_workload_is_told_why_it_waits() -> None:
    pending = view(State.PENDING, reason="Pending",
                   message="couldn't assign flavors to pod set main: insufficient quota for cpu")
    assert desired_status(pending, obj(), None, None, NOW) == {"conditions": [
        cond("QuotaReserved", "False", "Pending",
             "couldn't assign flavors to pod set main: insufficient quota for cpu"),
        cond("Admitted", "False", "NoReservation", "The workload has no reservation"),
    ]}


def test_a_pending_workload_without_an_answer_gets_the_default_words() -> None:
    status = desired_status(view(State.PENDING), obj(), None, None, NOW)
    assert status["conditions"][0] == cond("QuotaReserved", "False", "Pending",
                                           "The workload has no quota reservation")


def test_an_admitted_workload_shows_its_admission_and_the_usage_each_pod_set_charges() -> None:
    """2 pods of 1.5 cpu and 1Gi: 3 cpu and 2Gi charged to flavor default."""
    assert desired_status(view(State.ADMITTED), obj(), None, None, NOW) == {
        "conditions": [
            cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
            cond("Admitted", "True", "Admitted", "The workload is admitted"),
        ],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{
            "name": "main", "flavors": {"cpu": "default", "memory": "default"},
            "resourceUsage": {"cpu": "3", "memory": "2Gi"}, "count": 2}]},
    }


def test_quota_reserved_with_checks_not_ready_is_not_admitted_and_keeps_the_checks_own_writes() -> None:
    """`gate` is Ready as its controller wrote it (time and message kept); `prov` is new: Pending, now."""
    reserved = view(State.QUOTA_RESERVED, check_states={"prov": "Pending", "gate": "Ready"})
    current = obj(admissionChecks=[{"name": "gate", "state": "Ready", "lastTransitionTime": EARLIER,
                                    "message": "the gate is open"}])
    status = desired_status(reserved, current, None, None, NOW)
    assert status["conditions"] == [
        cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        cond("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready"),
    ]
    assert status["admissionChecks"] == [
        {"name": "gate", "state": "Ready", "lastTransitionTime": EARLIER, "message": "the gate is open"},
        {"name": "prov", "state": "Pending", "lastTransitionTime": STAMP, "message": ""},
    ]
    assert status["admission"]["clusterQueue"] == "cq"


def test_an_evicted_workload_requeued_at_once_says_evicted_and_requeued() -> None:
    eviction = Eviction("PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w")
    status = desired_status(view(State.PENDING, requeue_count=1), obj(), eviction, None, NOW)
    assert status["conditions"][2:] == [
        cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w"),
        cond("Requeued", "True", "Pending", "The workload is requeued"),
    ]
    assert status["requeueState"] == {"count": 1}


def test_an_evicted_workload_waiting_out_its_backoff_is_not_requeued_yet() -> None:
    eviction = Eviction("PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w")
    backing_off = view(State.PENDING, requeue_count=2, requeue_at=NOW + 60.5)
    status = desired_status(backing_off, obj(), eviction, None, NOW)
    assert status["conditions"][3] == cond("Requeued", "False", "PodsReadyTimeout",
                                           "Exceeded the PodsReady timeout ns/w")
    assert status["requeueState"] == {"count": 2, "requeueAt": "2027-01-15T08:01:00Z"}


def test_a_preempted_workload_names_its_preemptor_by_uid() -> None:
    status = desired_status(view(State.PENDING), obj(), PREEMPTED, ("uid-p", "job-p"), NOW)
    assert status["conditions"][2:] == [
        cond("Evicted", "True", "Preempted", PREEMPTED.message),
        cond("Requeued", "True", "Pending", "The workload is requeued"),
        cond("Preempted", "True", "InClusterQueue", "Preempted to accommodate a workload (UID: uid-p, "
             "JobUID: job-p) due to prioritization in the ClusterQueue"),
    ]


def test_a_workload_admitted_again_after_preemption_says_so_in_the_past_tense() -> None:
    again = view(State.ADMITTED, evictions=1)
    status = desired_status(again, obj(), PREEMPTED, ("uid-p", "job-p"), NOW)
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("QuotaReserved", "True"), ("Admitted", "True"), ("Evicted", "False"), ("Preempted", "False")]
    assert status["conditions"][2]["message"] == "Previously: " + PREEMPTED.message
    assert status["conditions"][2]["reason"] == "QuotaReserved"


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    current = obj(conditions=[{"type": "QuotaReserved", "status": "False", "lastTransitionTime": EARLIER},
                              {"type": "Admitted", "status": "True", "lastTransitionTime": EARLIER}])
    status = desired_status(view(State.PENDING), current, None, None, NOW)
    assert [c["lastTransitionTime"] for c in status["conditions"]] == [EARLIER, STAMP]  # Admitted flipped


def test_an_evicted_workload_has_its_checks_reset_to_pending() -> None:
    current = obj(admissionChecks=[
        {"name": "prov", "state": "Ready", "lastTransitionTime": EARLIER, "message": "provisioned"},
        {"name": "gate", "state": "Pending", "lastTransitionTime": EARLIER, "message": "waiting"}])
    status = desired_status(view(State.PENDING), current, None, None, NOW)
    assert status["admissionChecks"] == [
        {"name": "prov", "state": "Pending", "lastTransitionTime": STAMP,
         "message": "Reset to Pending after eviction. Previously: Ready"},
        {"name": "gate", "state": "Pending", "lastTransitionTime": EARLIER, "message": "waiting"},
    ]


def test_the_execution_time_already_spent_is_kept_when_the_workload_has_a_limit() -> None:
    limited = dataclasses.replace(SPEC, max_execution_seconds=600)
    status = desired_status(view(State.PENDING, spec=limited, accumulated_seconds=42), obj(), None, None, NOW)
    assert status["accumulatedPastExecutionTimeSeconds"] == 42
    assert "accumulatedPastExecutionTimeSeconds" not in desired_status(
        view(State.PENDING, accumulated_seconds=42), obj(), None, None, NOW)


def test_comparable_ignores_only_the_timestamps_and_the_apply_body_names_the_workload() -> None:
    one = desired_status(view(State.ADMITTED), obj(), None, None, NOW)
    later = desired_status(view(State.ADMITTED), obj(), None, None, NOW + 3600)
    assert one != later and comparable(one) == comparable(later)
    assert comparable(one) != comparable(desired_status(view(State.PENDING), obj(), None, None, NOW))
    assert apply_body(obj(), one) == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                      "metadata": {"name": "w", "namespace": "ns"}, "status": one}


def test_an_evicted_workload_whose_job_still_stops_keeps_its_reservation_and_its_admitted_condition() -> None:
    """STOPPING: QuotaReserved and the admission stay until the job has stopped; Admitted is copied
    from the API as it was (time included); Evicted says why; no Requeued yet."""
    eviction = Eviction("PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w")
    current = obj(conditions=[{"type": "Admitted", "status": "True", "reason": "Admitted",
                               "message": "The workload is admitted", "lastTransitionTime": EARLIER}])
    status = desired_status(view(State.STOPPING, admission=ADMISSION, evictions=1), current, eviction, None, NOW)
    assert status["conditions"] == [
        cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        cond("Admitted", "True", "Admitted", "The workload is admitted", since=EARLIER),
        cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w"),
    ]
    assert status["admission"]["clusterQueue"] == "cq"


def test_only_a_reservation_is_strict() -> None:
    """Upstream's scheduler applies an admission with strict=true: the request names the cached
    resourceVersion, so the API server refuses it once the object has changed. Other writes (a pending
    answer, a change of a reserved workload's conditions) are not guarded so."""
    cached = obj()
    cached["metadata"].update(uid="u-1", resourceVersion="7")
    reserve = desired_status(view(State.ADMITTED, admission=ADMISSION), cached, None, None, NOW)
    assert reserve["admission"]
    assert apply_body(cached, reserve)["metadata"] == {"name": "w", "namespace": "ns", "uid": "u-1",
                                                       "resourceVersion": "7"}
    pending = desired_status(view(State.PENDING), cached, None, None, NOW)
    assert "resourceVersion" not in apply_body(cached, pending)["metadata"]
    reserved = obj(admission=reserve["admission"])
    reserved["metadata"].update(uid="u-1", resourceVersion="8")
    assert "resourceVersion" not in apply_body(reserved, reserve)["metadata"]
