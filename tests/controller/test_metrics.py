"""`/metrics` under upstream's names and labels: counters and wait histograms from the engine's events,
gauges read from the engine at scrape time (and none before the controller has synced). The world is
a 4 cpu ClusterQueue `cq` with `a` (3 cpu) admitted and `b` (3 cpu) set aside; the clock stands at
1_800_000_000 s."""

from __future__ import annotations

import math

from pykueue.controller.manager import Controller
from pykueue.controller.observe.metrics import Metrics, _buckets, resource_value
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.workload import State
from pykueue.kube import resources as r
from tests.controller.controllers import controller_with, kueue, sync, workload

NOW = 1_800_000_000.0
CREATED = 1_767_225_600.0  # 2026-01-01T00:00:00Z, the test workloads' creationTimestamp


RESOURCES = model.Config(metrics=model.Metrics(cluster_queue_resources=True))


def world(config: model.Config = RESOURCES) -> tuple[Controller, Metrics]:
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"), config=config)
    ctl.run_cycle()
    metrics = Metrics()
    metrics.attach(ctl)
    return ctl, metrics


def value(metrics: Metrics, metric: str, /, **labels: str) -> float | None:
    """The sample of ``metric`` with ``labels`` and replica_role standalone (no leader election)."""
    return metrics.registry.get_sample_value(metric, {"replica_role": "standalone", **labels})


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
    assert value(metrics, "kueue_quota_reserved_workloads_total", priority_class="", cluster_queue="cq") == 1.0
    assert value(metrics, "kueue_admitted_workloads_total", priority_class="", cluster_queue="cq") == 1.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", priority_class="", cluster_queue="cq") == NOW - CREATED
    assert value(metrics, "kueue_admission_wait_time_seconds_count", priority_class="", cluster_queue="cq") == 1.0


def test_after_an_eviction_the_wait_counts_from_the_eviction() -> None:
    ctl, metrics = world()
    metrics.on_event(ev.Event(ev.EVICTED, "ns/a", "cq", reason=ev.EVICTED_DEACTIVATED,
                              underlying_cause=ev.CAUSE_REQUEUING_LIMIT), ctl)
    assert value(metrics, "kueue_evicted_workloads_total", priority_class="", cluster_queue="cq", reason="Deactivated",
                 underlying_cause="RequeuingLimitExceeded") == 1.0
    ctl.clock = lambda: NOW + 90
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", priority_class="", cluster_queue="cq") == 90.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_bucket", priority_class="", cluster_queue="cq", le="80.0") == 0.0
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_bucket", priority_class="", cluster_queue="cq", le="160.0") == 1.0


def test_a_workload_requeued_before_this_process_waits_from_its_requeued_condition() -> None:
    ctl, metrics = world()
    ctl.informers["workloads"].objects["ns/b"]["status"] = {"conditions": [  # type: ignore[attr-defined]
        {"type": "Requeued", "status": "True", "lastTransitionTime": "2027-01-15T07:59:00Z"}]}  # NOW - 60
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/b", "cq"), ctl)
    assert value(metrics, "kueue_quota_reserved_wait_time_seconds_sum", priority_class="", cluster_queue="cq") == 60.0


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


def test_pending_resources_are_what_the_pending_workloads_request_in_all() -> None:
    """upstream's kueue_cluster_queue_resource_pending (cluster_queue, resource): b (3 cpu, set aside)
    pending on the 4 cpu queue: 3; c (2 pods of 500m) arriving makes it 4; once a is finished and b and c
    are admitted (3 + 1 = 4), 0, still reported for the covered resource."""
    ctl, metrics = world()
    ctl.ready.set()
    assert value(metrics, "kueue_cluster_queue_resource_pending", cluster_queue="cq", resource="cpu") == 3.0
    c = workload("c", "500m")
    c["spec"]["podSets"][0]["count"] = 2
    ctl.informers["workloads"].objects["ns/c"] = c  # type: ignore[attr-defined]
    ctl.on_workload("ADDED", None, c)
    assert value(metrics, "kueue_cluster_queue_resource_pending", cluster_queue="cq", resource="cpu") == 4.0
    ctl.engine.finish_workload("ns/a", ctl.now_us())
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/b") is State.ADMITTED and ctl.engine.state_of("ns/c") is State.ADMITTED
    assert value(metrics, "kueue_cluster_queue_resource_pending", cluster_queue="cq", resource="cpu") == 0.0
    off, off_metrics = world(model.Config())  # only with metrics.enableClusterQueueResources, as upstream's
    off.ready.set()
    assert b"kueue_pending_workloads" in off_metrics.exposition()
    assert b"kueue_cluster_queue_resource_pending" not in off_metrics.exposition()


def test_a_deleted_cluster_queue_reports_terminating() -> None:
    ctl, metrics = world()
    ctl.ready.set()
    ctl.informers["clusterqueues"].objects["cq"]["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"  # type: ignore[attr-defined]
    assert value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="terminating") == 1.0
    assert value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="active") == 0.0


# ---- the series upstream's e2e spec adds: LocalQueueMetrics, weighted share, admission checks --------


def test_default_configuration_exports_no_resource_series_but_the_local_queues() -> None:
    """Upstream's defaults: enableClusterQueueResources off, the LocalQueueMetrics gate on. `lq`
    holds a (3 cpu, admitted) and b (3 cpu, set aside) of the 4 cpu `cq`."""
    ctl, metrics = world(model.Config())
    ctl.ready.set()
    text = metrics.exposition()
    for name in (b"kueue_cluster_queue_nominal_quota{", b"kueue_cluster_queue_resource_usage{",
                 b"kueue_cluster_queue_weighted_share{"):
        assert name not in text
    lq = {"name": "lq", "namespace": "ns"}
    assert value(metrics, "kueue_local_queue_pending_workloads", status="active", **lq) == 0.0
    assert value(metrics, "kueue_local_queue_pending_workloads", status="inadmissible", **lq) == 1.0
    assert value(metrics, "kueue_local_queue_reserving_active_workloads", **lq) == 1.0
    assert value(metrics, "kueue_local_queue_admitted_active_workloads", **lq) == 1.0
    assert [value(metrics, "kueue_local_queue_status", active=a, **lq) for a in ("True", "False", "Unknown")] == [
        1.0, 0.0, 0.0]
    flavor = {**lq, "flavor": "default", "resource": "cpu"}
    assert value(metrics, "kueue_local_queue_resource_reservation", **flavor) == 3.0
    assert value(metrics, "kueue_local_queue_resource_usage", **flavor) == 3.0
    assert value(metrics, "kueue_admission_cycle_preemption_skips", cluster_queue="cq") == 0.0


def test_local_queue_counters_follow_the_events() -> None:
    ctl, metrics = world()
    lq = {"name": "lq", "namespace": "ns"}
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    metrics.on_event(ev.Event(ev.ADMITTED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_local_queue_quota_reserved_workloads_total", priority_class="", **lq) == 1.0
    assert value(metrics, "kueue_local_queue_quota_reserved_wait_time_seconds_sum", priority_class="", **lq) == NOW - CREATED
    assert value(metrics, "kueue_local_queue_admitted_workloads_total", priority_class="", **lq) == 1.0
    assert value(metrics, "kueue_local_queue_admission_wait_time_seconds_count", priority_class="", **lq) == 1.0
    # a has no admission checks: upstream observes no admission-checks wait for it
    assert value(metrics, "kueue_admission_checks_wait_time_seconds_count", priority_class="", cluster_queue="cq") is None
    for _ in range(2):  # evicted twice for the same reason: counted twice, once "once"
        metrics.on_event(ev.Event(ev.EVICTED, "ns/a", "cq", reason="Preempted"), ctl)
    assert value(metrics, "kueue_local_queue_evicted_workloads_total", priority_class="", reason="Preempted", underlying_cause="",
                 **lq) == 2.0
    assert value(metrics, "kueue_evicted_workloads_total", priority_class="", cluster_queue="cq", reason="Preempted",
                 underlying_cause="") == 2.0
    assert value(metrics, "kueue_evicted_workloads_once_total", priority_class="", cluster_queue="cq", reason="Preempted",
                 underlying_cause="") == 1.0


def test_without_the_local_queue_metrics_gate_no_local_queue_series() -> None:
    ctl, metrics = world(model.Config(metrics=model.Metrics(local_queues=False)))
    ctl.ready.set()
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    assert b"kueue_local_queue_" not in b"\n".join(
        line for line in metrics.exposition().splitlines() if not line.startswith(b"#"))
    assert value(metrics, "kueue_quota_reserved_workloads_total", priority_class="", cluster_queue="cq") == 1.0


def test_the_admission_checks_wait_runs_from_the_reservation() -> None:
    """A workload of a ClusterQueue with a check reserves quota at NOW and is admitted 30 s later."""
    ctl, _ = controller_with(workload("a", "3"), config=RESOURCES)
    ctl.informers["admissionchecks"] = type(ctl.informers["clusterqueues"])({})  # type: ignore[call-arg]
    sync(ctl, r.ADMISSION_CHECK, "check", kueue("AdmissionCheck", "check", {"controllerName": "x"}))
    cq = ctl.informers["clusterqueues"].objects["cq"]  # type: ignore[attr-defined]
    sync(ctl, r.CLUSTER_QUEUE, "cq", {**cq, "spec": {**cq["spec"], "admissionChecksStrategy": {"admissionChecks": [{"name": "check"}]}}})
    ctl.run_cycle()
    metrics = Metrics()
    metrics.attach(ctl)
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    ctl.clock = lambda: NOW + 30
    metrics.on_event(ev.Event(ev.ADMITTED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_admission_checks_wait_time_seconds_sum", priority_class="", cluster_queue="cq") == 30.0
    assert value(metrics, "kueue_local_queue_admission_checks_wait_time_seconds_sum", priority_class="", name="lq",
                 namespace="ns") == 30.0


def borrowing_world(weight: str) -> tuple[Controller, Metrics]:
    """Fair sharing on; `cq` (4 cpu, weight ``weight``) and `lender` (4 cpu, idle) in cohort `co`: a
    and b (3 cpu each) both run in `cq`, which borrows 2 of the cohort's 8 lendable cpu."""
    config = model.Config(fair_sharing=model.FairSharing(enable=True), metrics=model.Metrics(cluster_queue_resources=True))
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"), config=config)
    cq = ctl.informers["clusterqueues"].objects["cq"]  # type: ignore[attr-defined]
    spec = {**cq["spec"], "cohortName": "co", "fairSharing": {"weight": weight}}
    sync(ctl, r.CLUSTER_QUEUE, "cq", {**cq, "spec": spec})
    sync(ctl, r.CLUSTER_QUEUE, "lender", kueue("ClusterQueue", "lender", {**spec, "fairSharing": {"weight": "1"}}))
    ctl.run_cycle()
    ctl.ready.set()
    metrics = Metrics()
    metrics.attach(ctl)
    return ctl, metrics


def test_weighted_share_is_the_borrowed_part_of_what_the_cohort_lends_per_mille_over_the_weight() -> None:
    ctl, metrics = borrowing_world("2")
    assert value(metrics, "kueue_cluster_queue_resource_usage", cohort="co", cluster_queue="cq", flavor="default",
                 resource="cpu") == 6.0
    # borrowed 6 - 4 = 2 of 8 lendable: 250 per mille, over weight 2
    assert value(metrics, "kueue_cluster_queue_weighted_share", cluster_queue="cq", cohort="co") == 125.0
    assert value(metrics, "kueue_cluster_queue_weighted_share", cluster_queue="lender", cohort="co") == 0.0


def test_weighted_share_of_a_weightless_borrower_is_nan() -> None:
    _, metrics = borrowing_world("0")
    assert math.isnan(value(metrics, "kueue_cluster_queue_weighted_share", cluster_queue="cq", cohort="co") or 0)


def test_a_deleted_cluster_queue_takes_its_series_and_its_local_queues_but_their_pending_counts() -> None:
    """As upstream's e2e spec: the ClusterQueue's series go, and the LocalQueue's but for its pending
    counts (0 here: a is deleted first)."""
    ctl, metrics = world()
    ctl.ready.set()
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/a", "cq"), ctl)
    metrics.on_event(ev.Event(ev.EVICTED, "ns/a", "cq", reason="Preempted"), ctl)
    lq = {"name": "lq", "namespace": "ns"}
    assert value(metrics, "kueue_local_queue_quota_reserved_workloads_total", priority_class="", **lq) == 1.0
    for key in ("ns/a", "ns/b"):
        obj = ctl.informers["workloads"].objects.pop(key)  # type: ignore[attr-defined]
        ctl.workload_sync.handle("DELETED", obj, None)
    for key in list(ctl.engine.workloads):
        ctl.engine.job_stopped(key, ctl.now_us())
    sync(ctl, r.CLUSTER_QUEUE, "cq", None)
    assert "cq" not in ctl.engine.cluster_queue_names()
    text = metrics.exposition().decode()
    for gone in ("kueue_quota_reserved_workloads_total{", "kueue_evicted_workloads_total{",
                 "kueue_evicted_workloads_once_total{", "kueue_cluster_queue_status{", "kueue_pending_workloads{",
                 "kueue_local_queue_quota_reserved_workloads_total{", "kueue_local_queue_evicted_workloads_total{",
                 "kueue_local_queue_status{", "kueue_local_queue_reserving_active_workloads{"):
        assert gone not in text, gone
    assert value(metrics, "kueue_local_queue_pending_workloads", status="active", **lq) == 0.0
    assert value(metrics, "kueue_local_queue_pending_workloads", status="inadmissible", **lq) == 0.0


def test_workload_counts_carry_the_workloads_priority_class() -> None:
    """A Workload of WorkloadPriorityClass `high` is counted under priority_class="high"."""
    ctl, _ = controller_with(config=RESOURCES)
    ctl.on_priority_class("ADDED", None, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                          "metadata": {"name": "high"}, "value": 100})
    w = workload("p", "1")
    w["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    w["spec"]["priority"] = 100
    ctl.informers["workloads"].objects["ns/p"] = w  # type: ignore[attr-defined]
    ctl.workload_sync.handle("ADDED", None, w)
    metrics = Metrics()
    metrics.attach(ctl)
    metrics.on_event(ev.Event(ev.QUOTA_RESERVED, "ns/p", "cq"), ctl)
    metrics.on_event(ev.Event(ev.EVICTED, "ns/p", "cq", reason="Preempted"), ctl)
    assert value(metrics, "kueue_quota_reserved_workloads_total", cluster_queue="cq", priority_class="high") == 1.0
    assert value(metrics, "kueue_local_queue_quota_reserved_workloads_total", name="lq", namespace="ns",
                 priority_class="high") == 1.0
    assert value(metrics, "kueue_evicted_workloads_total", cluster_queue="cq", reason="Preempted",
                 underlying_cause="", priority_class="high") == 1.0


def test_every_series_carries_the_replicas_role() -> None:
    """Under leader election the leader's series say replica_role="leader" (upstream's roletracker)."""
    ctl, _ = world()
    ctl.ready.set()
    metrics = Metrics(role=lambda: "leader")
    metrics.attach(ctl)
    metrics.admission_attempt("success", 0.25)
    metrics.on_event(ev.Event(ev.ADMITTED, "ns/a", "cq"), ctl)
    get = metrics.registry.get_sample_value
    assert get("kueue_admission_attempts_total", {"result": "success", "replica_role": "leader"}) == 1.0
    assert get("kueue_admitted_workloads_total", {"cluster_queue": "cq", "priority_class": "",
                                                  "replica_role": "leader"}) == 1.0
    assert get("kueue_reserving_active_workloads", {"cluster_queue": "cq", "replica_role": "leader"}) == 1.0
    assert get("kueue_local_queue_admitted_active_workloads", {"name": "lq", "namespace": "ns",
                                                               "replica_role": "leader"}) == 1.0
    assert b'replica_role="standalone"' not in metrics.exposition()


def test_a_finished_workload_is_counted_per_queue() -> None:
    ctl, metrics = world()
    metrics.on_event(ev.Event(ev.FINISHED, "ns/a", "cq"), ctl)
    assert value(metrics, "kueue_finished_workloads_total", cluster_queue="cq", priority_class="") == 1.0
    assert value(metrics, "kueue_local_queue_finished_workloads_total", name="lq", namespace="ns",
                 priority_class="") == 1.0


def test_a_workload_finished_before_admission_counts_under_no_cluster_queue() -> None:
    """As upstream, which reads status.admission.clusterQueue: b (set aside) finishes unadmitted."""
    ctl, metrics = world()
    ctl.engine.finish_workload("ns/b", ctl.now_us())
    metrics.on_event(ev.Event(ev.FINISHED, "ns/b", "cq"), ctl)
    assert value(metrics, "kueue_finished_workloads_total", cluster_queue="", priority_class="") == 1.0
    assert value(metrics, "kueue_finished_workloads_total", cluster_queue="cq", priority_class="") is None
    ctl.ready.set()
    metrics.exposition()  # a scrape prunes the series of deleted queues: "" is none
    assert value(metrics, "kueue_finished_workloads_total", cluster_queue="", priority_class="") == 1.0


def test_with_wait_for_pods_ready_the_waits_until_ready_are_observed_once_per_admission() -> None:
    """a, created at CREATED and admitted at NOW, has its pods ready 45 s later (twice: once counted)."""
    config = model.Config(wait_for_pods_ready=model.WaitForPodsReady(enable=True, timeout_seconds=300.0))
    ctl, metrics = world(config)
    ctl.clock = lambda: NOW + 45
    metrics.pods_ready("ns/a", ctl)
    metrics.pods_ready("ns/a", ctl)  # PodsReady flapped back: the same admission
    cq = {"cluster_queue": "cq", "priority_class": ""}
    assert value(metrics, "kueue_admitted_until_ready_wait_time_seconds_sum", **cq) == 45.0
    assert value(metrics, "kueue_admitted_until_ready_wait_time_seconds_count", **cq) == 1.0
    assert value(metrics, "kueue_ready_wait_time_seconds_sum", **cq) == NOW + 45 - CREATED
    assert value(metrics, "kueue_local_queue_admitted_until_ready_wait_time_seconds_sum", name="lq", namespace="ns",
                 priority_class="") == 45.0


def test_without_wait_for_pods_ready_no_ready_waits() -> None:
    ctl, metrics = world()
    metrics.pods_ready("ns/a", ctl)
    assert value(metrics, "kueue_admitted_until_ready_wait_time_seconds_count", cluster_queue="cq",
                 priority_class="") is None


def test_an_eviction_after_pods_ready_observes_how_long_they_were_ready() -> None:
    """a's PodsReady turned True 120 s before its preemption; b's pods were never ready."""
    ctl, metrics = world()
    ctl.informers["workloads"].objects["ns/a"]["status"] = {"conditions": [  # type: ignore[attr-defined]
        {"type": "PodsReady", "status": "True", "lastTransitionTime": "2027-01-15T07:58:00Z"}]}  # NOW - 120
    metrics.on_event(ev.Event(ev.EVICTED, "ns/a", "cq", reason="Preempted"), ctl)
    metrics.on_event(ev.Event(ev.EVICTED, "ns/b", "cq", reason="Preempted"), ctl)
    labels = {"cluster_queue": "cq", "reason": "Preempted", "underlying_cause": ""}
    assert value(metrics, "kueue_pods_ready_to_evicted_time_seconds_sum", **labels) == 120.0
    assert value(metrics, "kueue_pods_ready_to_evicted_time_seconds_count", **labels) == 1.0


def test_a_replaced_slice_is_counted_in_its_cluster_queue() -> None:
    """kueue_replaced_workload_slices_total: an elastic job's old slice finished by a scale-up, not a
    job that completes."""
    ctl, metrics = world()
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") is None
    ctl.engine.finish_workload("ns/a", 0, reason="WorkloadSliceReplaced", by="ns/a2")
    metrics.on_event(ev.Event(ev.FINISHED, "ns/a", "cq", reason="WorkloadSliceReplaced", by="ns/a2"), ctl)
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") == 1.0
    ctl.engine.finish_workload("ns/b", 0)
    metrics.on_event(ev.Event(ev.FINISHED, "ns/b", "cq"), ctl)
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") == 1.0
