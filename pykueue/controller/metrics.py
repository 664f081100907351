"""Kueue's Prometheus metrics under upstream's names and labels (`pkg/metrics/metrics.go`, subsystem
`kueue`), so upstream's dashboards and alerts work unchanged.

Counters and histograms follow the engine's events as the controller handles them; the gauges
(pending, reserving, quota, usage, status) are read from the engine when `/metrics` is scraped. The
scrape runs on the controller's asyncio loop (health.py serves it there), so reading the engine needs
no lock and costs nothing between scrapes. Each `Metrics` has its own registry, not the process-wide
one, so several controllers can live in one process (tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from pykueue.controller import views
from pykueue.engine import events as ev

if TYPE_CHECKING:
    from pykueue.controller.readsource import ReadSource

NAMESPACE = "kueue"
SUCCESS, INADMISSIBLE = "success", "inadmissible"  # AdmissionResult
CQ_STATUSES = ("pending", "active", "terminating")


def _buckets(count: int = 14) -> tuple[float, ...]:
    """upstream's generateExponentialBuckets(14): 1, then 2.5 doubling 13 times (up to ~5.7 h)."""
    return (1.0, *(2.5 * 2**i for i in range(count - 1)))


def resource_value(resource: str, value: int | None) -> float:
    """A canonical quantity as upstream's QuantityToFloat reports it: cores for cpu (the engine keeps
    milli-cpu), plain units otherwise; an unset limit is +Inf, as upstream reports it now."""
    if value is None:
        return math.inf
    return value / 1000 if resource == "cpu" else float(value)


class Metrics:
    """The registry `/metrics` serves, and the hooks the controller calls."""

    def __init__(self) -> None:
        disable_created_metrics()  # no `*_created` series: upstream's Go client exposes none
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.admission_attempts = Counter(
            "admission_attempts_total", "The total number of attempts to admit workloads. 'result' is "
            "'success' when at least one workload was admitted, 'inadmissible' otherwise.",
            ["result"], namespace=NAMESPACE, registry=reg)
        self.admission_attempt_duration = Histogram(
            "admission_attempt_duration_seconds", "The latency of an admission attempt, per 'result'.",
            ["result"], namespace=NAMESPACE, registry=reg)
        self.quota_reserved = Counter(
            "quota_reserved_workloads_total", "The total number of quota reserved workloads per 'cluster_queue'",
            ["cluster_queue"], namespace=NAMESPACE, registry=reg)
        self.quota_reserved_wait = Histogram(
            "quota_reserved_wait_time_seconds", "The time between a workload was created or requeued until "
            "it got quota reservation, per 'cluster_queue'",
            ["cluster_queue"], namespace=NAMESPACE, registry=reg, buckets=_buckets())
        self.admitted = Counter(
            "admitted_workloads_total", "The total number of admitted workloads per 'cluster_queue'",
            ["cluster_queue"], namespace=NAMESPACE, registry=reg)
        self.admission_wait = Histogram(
            "admission_wait_time_seconds", "The time between a workload was created or requeued until "
            "admission, per 'cluster_queue'", ["cluster_queue"], namespace=NAMESPACE, registry=reg,
            buckets=_buckets())
        self.evicted = Counter(
            "evicted_workloads_total", "The number of evicted workloads per 'cluster_queue', 'reason' "
            "(Preempted, PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, LocalQueueStopped, "
            "Deactivated) and 'underlying_cause' (empty, or why Kueue deactivated it: AdmissionCheck, "
            "RequeuingLimitExceeded)", ["cluster_queue", "reason", "underlying_cause"],
            namespace=NAMESPACE, registry=reg)
        self.preempted = Counter(
            "preempted_workloads_total", "The number of preempted workloads per 'preempting_cluster_queue' "
            "and 'reason' (InClusterQueue, InCohortReclamation, InCohortFairSharing, "
            "InCohortReclaimWhileBorrowing)", ["preempting_cluster_queue", "reason"],
            namespace=NAMESPACE, registry=reg)
        self.registry.register(_EngineGauges(self))
        self.controller: ReadSource | None = None
        self._queued_since: dict[str, float] = {}  # last eviction or requeue, per workload

    def attach(self, controller: ReadSource) -> None:
        """The controller whose engine the gauges report (the leader's, once it has synced)."""
        self.controller = controller

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    # ---- hooks ------------------------------------------------------------------------------------

    def admission_attempt(self, result: str, seconds: float) -> None:
        self.admission_attempts.labels(result).inc()
        self.admission_attempt_duration.labels(result).observe(seconds)

    def on_event(self, event: ev.Event, controller: ReadSource) -> None:
        """Count one engine event as upstream counts the decision it stands for."""
        now = controller.clock()
        key, cq = event.workload, event.cluster_queue or ""
        if event.type == ev.QUOTA_RESERVED:
            self.quota_reserved.labels(cq).inc()
            self.quota_reserved_wait.labels(cq).observe(self._waited(key, controller, now))
        elif event.type == ev.ADMITTED:
            self.admitted.labels(cq).inc()
            self.admission_wait.labels(cq).observe(self._waited(key, controller, now))
        elif event.type == ev.PREEMPTED:
            preempting = views.cluster_queue_of(controller.engine, event.by or "") or ""
            self.preempted.labels(preempting, event.reason or "").inc()
        elif event.type == ev.EVICTED:
            self.evicted.labels(cq, event.reason or "", event.underlying_cause or "").inc()
            self._queued_since[key] = now
        elif event.type == ev.REQUEUED:
            self._queued_since[key] = now

    def forget(self, key: str) -> None:
        self._queued_since.pop(key, None)

    def _waited(self, key: str, controller: ReadSource, now: float) -> float:
        """upstream's QueuedWaitTime: since the workload was created, or last requeued (the Requeued
        condition's transition, for a workload this process has not seen evicted)."""
        since = self._queued_since.get(key)
        if since is None:
            obj = controller.cached("workloads", key)
            cond = next((c for c in ((obj or {}).get("status") or {}).get("conditions") or []
                         if c.get("type") == "Requeued"), None)
            if cond is not None:
                from pykueue.controller.translate import parse_time

                since = parse_time(cond.get("lastTransitionTime"))
        if since is None:
            since = views.creation_time(controller.engine, key)
        return max(0.0, now - since) if since else 0.0


class _EngineGauges(Collector):
    """upstream's per-ClusterQueue gauges, computed at scrape time from the engine; nothing while this
    replica is not the leader (a standby runs no engine, as upstream's reconcilers run on the leader only)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # families are only known at collect time; no name clash is possible with the others

    def collect(self) -> Iterator[Metric]:
        def family(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"{NAMESPACE}_{name}", doc, labels=labels)

        frl = ["cohort", "cluster_queue", "flavor", "resource"]
        pending = family("pending_workloads", "The number of pending workloads, per 'cluster_queue' and "
                         "'status' (active: in the admission queue; inadmissible: set aside until cluster "
                         "conditions change)", ["cluster_queue", "status"])
        reserving = family("reserving_active_workloads", "The number of Workloads that are reserving quota, "
                           "per 'cluster_queue'", ["cluster_queue"])
        admitted = family("admitted_active_workloads", "The number of admitted Workloads that are active "
                          "(unsuspended and not finished), per 'cluster_queue'", ["cluster_queue"])
        status = family("cluster_queue_status", "Reports 'cluster_queue' with its 'status' (pending, active "
                        "or terminating); 1 for the current one", ["cluster_queue", "status"])
        nominal = family("cluster_queue_nominal_quota", "Reports the cluster_queue's resource nominal quota "
                         "within all the flavors", frl)
        borrowing = family("cluster_queue_borrowing_limit", "Reports the cluster_queue's resource borrowing "
                           "limit within all the flavors", frl)
        lending = family("cluster_queue_lending_limit", "Reports the cluster_queue's resource lending limit "
                         "within all the flavors", frl)
        reservation = family("cluster_queue_resource_reservation", "Reports the cluster_queue's total "
                             "resource reservation within all the flavors", frl)
        usage = family("cluster_queue_resource_usage", "Reports the cluster_queue's total resource usage "
                       "within all the flavors", frl)
        families = [pending, reserving, admitted, status, nominal, borrowing, lending, reservation, usage]
        controller = self.metrics.controller
        if controller is None or not controller.ready.is_set():
            return
        for q in views.queue_metrics(controller.engine):
            pending.add_metric([q.name, "active"], q.pending_active)
            pending.add_metric([q.name, "inadmissible"], q.pending_inadmissible)
            reserving.add_metric([q.name], q.reserving)
            admitted.add_metric([q.name], q.admitted)
            obj = controller.cached("clusterqueues", q.name)
            current = ("terminating" if obj and obj["metadata"].get("deletionTimestamp")
                       else "active" if q.active else "pending")
            for s in CQ_STATUSES:
                status.add_metric([q.name, s], 1.0 if s == current else 0.0)
            for flavor, resource, quota in q.quotas:
                labels = [q.cohort, q.name, flavor, resource]
                nominal.add_metric(labels, resource_value(resource, quota.nominal))
                borrowing.add_metric(labels, resource_value(resource, quota.borrowing_limit))
                lending.add_metric(labels, resource_value(resource, quota.lending_limit))
                reservation.add_metric(labels, resource_value(resource, q.reserved.get((flavor, resource), 0)))
                usage.add_metric(labels, resource_value(resource, q.in_use.get((flavor, resource), 0)))
        yield from families
