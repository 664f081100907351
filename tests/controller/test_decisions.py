"""Each engine decision fanned out: the reason as upstream words it, one structured log line, and the
Kubernetes Event upstream records on the Workload."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pykueue.controller.core import decisions
from pykueue.engine import events as ev
from pykueue.engine import model

WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u"}, "spec": {"maximumExecutionTimeSeconds": 600}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def emit(self, obj: dict[str, Any] | None, reason: str, message: str, kind: str = "Normal") -> None:
        assert obj is WORKLOAD
        self.events.append((reason, message, kind))


def recorded(event: ev.Event) -> list[tuple[str, str, str]]:
    recorder = Recorder()
    decisions.record(recorder, WORKLOAD, event, decisions.reason_of(event))  # type: ignore[arg-type]
    return recorder.events


def test_a_deactivation_carries_its_cause_in_the_reason() -> None:
    deactivated = ev.Event(ev.EVICTED, "ns/w", "cq", reason=ev.EVICTED_DEACTIVATED,
                           underlying_cause=ev.CAUSE_REQUEUING_LIMIT)
    assert decisions.reason_of(deactivated) == "DeactivatedDueToRequeuingLimitExceeded"
    assert decisions.reason_of(ev.Event(ev.EVICTED, "ns/w", "cq", reason=ev.EVICTED_DEACTIVATED)) == "Deactivated"
    assert decisions.reason_of(ev.Event(ev.EVICTED, "ns/w", "cq", reason="PodsReadyTimeout")) == "PodsReadyTimeout"


def test_the_events_upstream_records_for_each_decision() -> None:
    assert recorded(ev.Event(ev.QUOTA_RESERVED, "ns/w", "cq")) == [
        ("QuotaReserved", "Quota reserved in ClusterQueue cq", "Normal")]
    assert recorded(ev.Event(ev.ADMITTED, "ns/w", "cq")) == [("Admitted", "Admitted by ClusterQueue cq", "Normal")]
    assert recorded(ev.Event(ev.PREEMPTED, "ns/w", "cq", reason="InClusterQueue", by="ns/p")) == [
        ("Preempted", "Preempted by ns/p (InClusterQueue)", "Normal")]
    assert recorded(ev.Event(ev.EVICTED, "ns/w", "cq", reason="PodsReadyTimeout", message="too slow")) == [
        ("EvictedDueToPodsReadyTimeout", "too slow", "Normal")]
    assert recorded(ev.Event(ev.REQUEUED, "ns/w", "cq")) == [("Requeued", "The workload is requeued", "Normal")]


def test_a_preemptions_eviction_records_nothing_more_than_the_preemption() -> None:
    assert recorded(ev.Event(ev.EVICTED, "ns/w", "cq", reason=ev.EVICTED_PREEMPTED)) == []
    assert recorded(ev.Event(ev.FINISHED, "ns/w", "cq")) == []


def test_a_deactivation_for_running_too_long_records_the_limit_then_the_deactivation() -> None:
    event = ev.Event(ev.DEACTIVATED, "ns/w", "cq", reason=ev.CAUSE_MAX_EXECUTION_TIME,
                     message="exceeded the maximum execution time")
    assert recorded(event) == [
        ("MaximumExecutionTimeExceeded", "The maximum execution time (600s) exceeded", "Warning"),
        ("WorkloadDeactivated", "exceeded the maximum execution time", "Warning")]


def test_one_log_line_per_decision_with_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    admission = model.Admission("cq", (model.PodSetAssignment("main", 2, {"memory": "big", "cpu": "fast"}),))
    with caplog.at_level(logging.INFO, logger="pykueue.controller"):
        decisions.log_line(ev.Event(ev.ADMITTED, "ns/w", "cq", by="ns/p", admission=admission,
                                    message="fits"), None)
        decisions.log_line(ev.Event(ev.EVICTED, "ns/w", None, reason="PodsReadyTimeout"), "PodsReadyTimeout")
    assert [r.getMessage() for r in caplog.records] == ["decision", "decision"]
    assert [r.fields for r in caplog.records] == [  # type: ignore[attr-defined]
        {"decision": "Admitted", "workload": "ns/w", "clusterQueue": "cq", "reason": "Admitted", "by": "ns/p",
         "flavors": "main:cpu=fast,main:memory=big", "message": "fits"},
        {"decision": "Evicted", "workload": "ns/w", "clusterQueue": "", "reason": "PodsReadyTimeout"}]


def test_a_replaced_slice_records_upstreams_event() -> None:
    """An elastic job's old workload slice finished by a scale-up: upstream's Normal WorkloadSliceReplaced."""
    event = ev.Event(ev.FINISHED, "ns/w", "cq", reason="WorkloadSliceReplaced", by="ns/w2", message="replaced")
    assert recorded(event) == [("WorkloadSliceReplaced", "replaced", "Normal")]
