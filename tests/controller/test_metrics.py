"""`/metrics` under upstream's names and labels: counters and wait histograms from the engine's events,
gauges read from the engine at scrape time (and none before the controller has synced). The world is
a 4 cpu ClusterQueue `cq` with `a` (3 cpu) admitted and `b` (3 cpu) set aside; the clock stands at
1_800_000_000 s."""

from __future__ import annotations

import math

from pykueue.controller.manager import Controller
from pykueue.controller.metrics import Metrics, _buckets, resource_value
from pykueue.engine import events as ev
from tests.controller.test_status_writes import controller_with, workload

NOW = 1_800_000_000.0
CREATED = 1_767_225_600.0  # 2026-01-01T00:00:00Z, the test workloads' creationTimestamp


def world() -> tuple[Controller, Metrics]:
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"))
    ctl.run_cycle()
    metrics = Metrics()
    metrics.attach(ctl)
    return ctl, metrics


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_buckets_and_resource_values_are_upstreams() -> None:
    assert _buckets() == (1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0, 2560.0, 5120.0,
                          10240.0)
    assert resource_value("cpu", 1500) == 1.5  # milli-cpu to cores
    assert resource_value("memory", 2**30) == 1073741824.0
    assert resource_value("cpu", None) == math.inf  # no limit


def test_a_reservation_counts_and_observes_the_wait_since_creation() -> None:
    ctl, metrics = world()
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    metrics.on_event(ev.Event(ev.ADMITTED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_quota_reserved_workloads_total", cluster_queue="cq") == 1.0
    assert value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq") == 1.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", cluster_queue="cq") == NOW - CREATED
    assert value(metrics, "kueue_admission_wait_time_seconds_count", cluster_queue="cq") == 1.0


def test_after_an_eviction_the_wait_counts_from_the_eviction() -> None:
    ctl, metrics = world()
    metrics.on_event(ev.Event(ev.EVICTED, "ns/a", "cq", reason=ev.EVICTED_DEACTIVATED,
                              underlying_cause=ev.CAUSE_REQUEUING_LIMIT), ctl)
    assert value(metrics, "kueue_evicted_workloads_total", cluster_queue="cq", reason="Deactivated",
                 underlying_cause="RequeuingLimitExceeded") == 1.0
    ctl.clock = lambda: NOW + 90
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", cluster_queue="cq") == 90.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_bucket", cluster_queue="cq", le="80.0") == 0.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_bucket", cluster_queue="cq", le="160.0") == 1.0


def test_a_workload_requeued_before_this_process_waits_from_its_requeued_condition() -> None:
    ctl, metrics = world()
    ctl.informers["workloads"].objects["ns/b"]["status"] = {"conditions": [  # type: ignore[attr-defined]
        {"type": "Requeued", "status": "True", "lastTransitionTime": "2027-01-15T07:59:00Z"}]}  # NOW - 60
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/b", "cq"), ctl)
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", cluster_queue="cq") == 60.0


def test_a_preemption_counts_against_the_preemptors_cluster_queue() -> None:
    ctl, metrics = world()
    metrics.on_event(ev.Event(ev.PREEMPTED, "ns/x", "other", reason="InClusterQueue", by="ns/a"), ctl)
    assert value(metrics, "kueue_preempted_workloads_total", preempting_cluster_queue="cq",
                 reason="InClusterQueue") == 1.0


def test_admission_attempts_count_per_result() -> None:
    metrics = Metrics()
    metrics.admission_attempt("success", 0.25)
    metrics.admission_attempt("inadmissible", 0.5)
    metrics.admission_attempt("inadmissible", 0.5)
    assert value(metrics, "kueue_admission_attempts_total", result="inadmissible") == 2.0
    assert value(metrics, "kueue_admission_attempt_duration_seconds_sum", result="inadmissible") == 1.0


def test_gauges_are_read_from_the_engine_once_synced() -> None:
    ctl, metrics = world()
    assert b"kueue_pending_workloads" not in metrics.exposition()  # not synced yet: no engine gauges
    ctl.ready.set()
    cq = {"cluster_queue": "cq"}
    quota = {"cohort": "", "cluster_queue": "cq", "flavor": "default", "resource": "cpu"}
    assert value(metrics, "kueue_pending_workloads", status="active", **cq) == 0.0
    assert value(metrics, "kueue_pending_workloads", status="inadmissible", **cq) == 1.0  # b, tried, set aside
    assert value(metrics, "kueue_reserving_active_workloads", **cq) == 1.0
    assert value(metrics, "kueue_admitted_active_workloads", **cq) == 1.0
    assert [value(metrics, "kueue_cluster_queue_status", status=s, **cq) for s in ("pending", "active",
                                                                                     "terminating")] == [0, 1, 0]
    assert value(metrics, "kueue_cluster_queue_nominal_quota", **quota) == 4.0
    assert value(metrics, "kueue_cluster_queue_borrowing_limit", **quota) == math.inf
    assert value(metrics, "kueue_cluster_queue_resource_reservation", **quota) == 3.0
    assert value(metrics, "kueue_cluster_queue_resource_usage", **quota) == 3.0


def test_a_deleted_cluster_queue_reports_terminating() -> None:
    ctl, metrics = world()
    ctl.ready.set()
    ctl.informers["clusterqueues"].objects["cq"]["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"  # type: ignore[attr-defined]
    assert value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="terminating") == 1.0
    assert value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="active") == 0.0
