"""Kueue's Prometheus metrics under upstream's names and labels (`pkg/metrics/metrics.go`, subsystem
`kueue`), so upstream's dashboards and alerts work unchanged.

Counters and histograms follow the engine's events as the controller handles them; the gauges
(pending, reserving, quota, usage, status, weighted share) are read from the engine when `/metrics` is
scraped. The scrape runs on the controller's asyncio loop (health.py serves it there), so reading the
engine needs no lock and costs nothing between scrapes. A scrape also drops the counters and
histograms of queues that are gone, as upstream's ClearClusterQueueMetrics / ClearLocalQueueMetrics
do. Which optional series appear follows the Configuration (``model.Metrics``). Each `Metrics` has
its own registry, not the process-wide one, so several controllers can live in one process (tests).
docs/metrics.md lists every upstream series beside this module's.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from pykueue.controller.core import views
from pykueue.engine import events as ev
from pykueue.engine import slices

if TYPE_CHECKING:
    from pykueue.controller.core.readsource import ReadSource
    from pykueue.engine.engine import Engine

NAMESPACE = "kueue"
SUCCESS, INADMISSIBLE = "success", "inadmissible"  # AdmissionResult
CQ_STATUSES = ("pending", "active", "terminating")
LQ_ACTIVE = ("True", "False", "Unknown")
LQ = ["name", "namespace"]  # upstream's LocalQueue labels, in its order
ROLE = "replica_role"  # upstream's last label on every series: leader, follower or standalone
STANDALONE = "standalone"  # no leader election
Owner = tuple[str, str]  # ("cq", NAME) or ("lq", NAMESPACE/NAME): whose deletion clears a series


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

    def __init__(self, role: Callable[[], str] = lambda: STANDALONE) -> None:
        """``role``: this replica's replica_role now (leader or follower under leader election)."""
        self.role = role
        disable_created_metrics()  # no `*_created` series: upstream's Go client exposes none
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry

        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(name, doc, [*labels, ROLE], namespace=NAMESPACE, registry=reg)

        def waited(name: str, doc: str, labels: list[str]) -> Histogram:
            """A wait-time histogram, with upstream's exponential buckets."""
            return Histogram(name, doc, [*labels, ROLE], namespace=NAMESPACE, registry=reg, buckets=_buckets())

        # upstream labels each workload count and wait by the workload's priority class ("" for none)
        cq, lq = ["cluster_queue", "priority_class"], [*LQ, "priority_class"]
        since_created = "The time between a workload was created or requeued until "
        since_reserved = "The time from when a workload got the quota reservation until admission, per "
        self.admission_attempts = counter(
            "admission_attempts_total", "The total number of attempts to admit workloads. 'result' is "
            "'success' when at least one workload was admitted, 'inadmissible' otherwise.", ["result"])
        self.admission_attempt_duration = Histogram(
            "admission_attempt_duration_seconds", "The latency of an admission attempt, per 'result'.",
            ["result", ROLE], namespace=NAMESPACE, registry=reg)  # the client's default buckets, as upstream
        self.quota_reserved = counter(
            "quota_reserved_workloads_total", "The total number of quota reserved workloads per 'cluster_queue'", cq)
        self.quota_reserved_wait = waited(
            "quota_reserved_wait_time_seconds", f"{since_created}it got quota reservation, per 'cluster_queue'", cq)
        self.admitted = counter(
            "admitted_workloads_total", "The total number of admitted workloads per 'cluster_queue'", cq)
        self.admission_wait = waited(
            "admission_wait_time_seconds", f"{since_created}admission, per 'cluster_queue'", cq)
        self.finished = counter("finished_workloads_total", "The total number of finished workloads per 'cluster_queue'", cq)
        self.ready_wait = waited("ready_wait_time_seconds", f"{since_created}ready, per 'cluster_queue'", cq)
        self.admitted_until_ready = waited(
            "admitted_until_ready_wait_time_seconds", "The time between a workload was admitted until ready, "
            "per 'cluster_queue'", cq)
        self.admission_checks_wait = waited("admission_checks_wait_time_seconds", f"{since_reserved}'cluster_queue'", cq)
        evicted_doc = ("'reason' (Preempted, PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, "
                       "LocalQueueStopped, Deactivated) and 'underlying_cause' (empty, or why Kueue deactivated "
                       "it: AdmissionCheck, RequeuingLimitExceeded)")
        causes = ["reason", "underlying_cause", "priority_class"]
        self.evicted = counter(
            "evicted_workloads_total", f"The number of evicted workloads per 'cluster_queue', {evicted_doc}",
            ["cluster_queue", *causes])
        self.evicted_once = counter(
            "evicted_workloads_once_total", "The number of unique workload evictions (a workload counts once "
            f"per reason and cause) per 'cluster_queue', {evicted_doc}", ["cluster_queue", *causes])
        self.ready_to_evicted = waited(
            "pods_ready_to_evicted_time_seconds", "The number of seconds between a workload's pods being ready "
            f"and its eviction, per 'cluster_queue', {evicted_doc}", ["cluster_queue", "reason", "underlying_cause"])
        self.replaced = counter("replaced_workload_slices_total", "The number of replaced workload slices (an "
                                "elastic job scaled up) per 'cluster_queue'", ["cluster_queue"])
        self.preempted = counter(
            "preempted_workloads_total", "The number of preempted workloads per 'preempting_cluster_queue' "
            "and 'reason' (InClusterQueue, InCohortReclamation, InCohortFairSharing, "
            "InCohortReclaimWhileBorrowing)", ["preempting_cluster_queue", "reason"])
        # LocalQueueMetrics: the same per 'local_queue' (labels 'name' and 'namespace')
        self.lq_quota_reserved = counter(
            "local_queue_quota_reserved_workloads_total", "The total number of quota reserved workloads per "
            "'local_queue'", lq)
        self.lq_quota_reserved_wait = waited(
            "local_queue_quota_reserved_wait_time_seconds", f"{since_created}it got quota reservation, per "
            "'local_queue'", lq)
        self.lq_admitted = counter(
            "local_queue_admitted_workloads_total", "The total number of admitted workloads per 'local_queue'", lq)
        self.lq_finished = counter(
            "local_queue_finished_workloads_total", "The total number of finished workloads per 'local_queue'", lq)
        self.lq_ready_wait = waited(
            "local_queue_ready_wait_time_seconds", f"{since_created}ready, per 'local_queue'", lq)
        self.lq_admitted_until_ready = waited(
            "local_queue_admitted_until_ready_wait_time_seconds", "The time between a workload was admitted "
            "until ready, per 'local_queue'", lq)
        self.lq_admission_wait = waited(
            "local_queue_admission_wait_time_seconds", f"{since_created}admission, per 'local_queue'", lq)
        self.lq_admission_checks_wait = waited(
            "local_queue_admission_checks_wait_time_seconds", f"{since_reserved}'local_queue'", lq)
        self.lq_evicted = counter(
            "local_queue_evicted_workloads_total", f"The number of evicted workloads per 'local_queue', {evicted_doc}",
            [*LQ, *causes])
        self.registry.register(_EngineGauges(self))
        self.controller: ReadSource | None = None
        # the labelled series each queue owns: cleared with the queue
        self._owned: dict[Owner, set[tuple[MetricWrapperBase, tuple[str, ...]]]] = {}

    def attach(self, controller: ReadSource) -> None:
        """The controller whose engine the gauges report (the leader's, once it has synced)."""
        self.controller = controller

    def exposition(self) -> bytes:
        self.prune()
        return generate_latest(self.registry)

    def prune(self) -> None:
        """Drop the counters and histograms of deleted queues (and of LocalQueues whose ClusterQueue is
        gone), as upstream clears them; O(queues), nothing while the controller has not synced."""
        controller = self.controller
        if controller is None or not controller.ready.is_set() or not self._owned:
            return
        cqs, lqs = views.live_queues(controller.engine)
        # "" is no queue (a workload that finished unadmitted): nothing deletes it
        for owner in [o for o in self._owned if o[1] and o[1] not in (cqs if o[0] == "cq" else lqs)]:
            for metric, labels in self._owned.pop(owner):
                with contextlib.suppress(KeyError):  # already gone
                    metric.remove(*labels)

    def _child(self, metric: MetricWrapperBase, owner: Owner, *labels: str):  # noqa: ANN202 - a labelled child
        """``metric``'s series for ``labels`` and this replica's role, owned by the queue ``owner``."""
        labels = (*labels, self.role())
        self._owned.setdefault(owner, set()).add((metric, labels))
        return metric.labels(*labels)

    # ---- hooks ------------------------------------------------------------------------------------

    def admission_attempt(self, result: str, seconds: float) -> None:
        role = self.role()
        self.admission_attempts.labels(result, role).inc()
        self.admission_attempt_duration.labels(result, role).observe(seconds)

    def on_event(self, event: ev.Event, controller: ReadSource) -> None:
        """Count one engine event as upstream counts the decision it stands for (per LocalQueue too
        when the LocalQueueMetrics gate is on)."""
        now = controller.clock()
        engine = controller.engine
        key, cq = event.workload, event.cluster_queue or ""
        pc = views.priority_class_of(engine, key)
        targets = self._targets(engine, key, cq)

        def record(metrics: tuple[MetricWrapperBase, MetricWrapperBase], observed: float | None = None,
                   *extra: str) -> None:
            self._record(targets, metrics, observed, *extra)

        if event.type == ev.QUOTA_RESERVED:
            waited = self._waited(key, controller, now)
            record((self.quota_reserved, self.lq_quota_reserved), None, pc)
            record((self.quota_reserved_wait, self.lq_quota_reserved_wait), waited, pc)
        elif event.type == ev.ADMITTED:
            waited = self._waited(key, controller, now)
            record((self.admitted, self.lq_admitted), None, pc)
            record((self.admission_wait, self.lq_admission_wait), waited, pc)
            reserved = views.reserved_time(engine, key)
            if views.has_admission_checks(engine, key) and reserved is not None:
                # upstream observes it only for a workload with admission checks
                record((self.admission_checks_wait, self.lq_admission_checks_wait), max(0.0, now - reserved), pc)
        elif event.type == ev.PREEMPTED:
            preempting = views.cluster_queue_of(engine, event.by or "") or ""
            self._child(self.preempted, ("cq", preempting), preempting, event.reason or "").inc()
        elif event.type == ev.EVICTED:
            reason, cause = event.reason or "", event.underlying_cause or ""
            record((self.evicted, self.lq_evicted), None, reason, cause, pc)
            ready_since = _pods_ready_since(controller.cached("workloads", key))
            if ready_since is not None:  # its pods were ready when it was evicted
                self._child(self.ready_to_evicted, ("cq", cq), cq, reason, cause).observe(max(0.0, now - ready_since))
            rec = controller.records.at(key)  # what a workload's metrics remember is in its record
            if (reason, cause) not in rec.evictions_seen:
                rec.evictions_seen.add((reason, cause))
                self._child(self.evicted_once, ("cq", cq), cq, reason, cause, pc).inc()
            rec.queued_since = now
        elif event.type == ev.FINISHED:
            admitted_to = views.finished_under(engine, key)
            targets[0] = (("cq", admitted_to), (admitted_to,))
            record((self.finished, self.lq_finished), None, pc)
            if event.reason == slices.WORKLOAD_SLICE_REPLACED:
                self._child(self.replaced, ("cq", admitted_to), admitted_to).inc()
        elif event.type == ev.REQUEUED:
            controller.records.at(key).queued_since = now

    def pods_ready(self, key: str, controller: ReadSource) -> None:
        """The admitted workload's PodsReady turned True: with waitForPodsReady, observe the waits
        until ready (since queued, since admitted), once per admission."""
        engine = controller.engine
        admitted = views.admitted_time(engine, key)
        rec = controller.records.at(key)
        if not views.waits_for_pods_ready(engine) or admitted is None or rec.ready_after == admitted:
            return
        rec.ready_after = admitted
        now = controller.clock()
        cq = views.cluster_queue_of(engine, key) or ""
        targets, pc = self._targets(engine, key, cq), views.priority_class_of(engine, key)
        self._record(targets, (self.ready_wait, self.lq_ready_wait), self._waited(key, controller, now), pc)
        self._record(targets, (self.admitted_until_ready, self.lq_admitted_until_ready), max(0.0, now - admitted), pc)

    def _targets(self, engine: Engine, key: str, cq: str) -> list[tuple[Owner, tuple[str, ...]]]:
        """Where a workload's counts go: its ClusterQueue's series, then (LocalQueueMetrics) its
        LocalQueue's twin."""
        targets: list[tuple[Owner, tuple[str, ...]]] = [(("cq", cq), (cq,))]
        lq = views.local_queue_of(engine, key) if views.metrics_config(engine).local_queues else None
        if lq is not None:
            targets.append((("lq", f"{lq[0]}/{lq[1]}"), (lq[1], lq[0])))
        return targets

    def _record(self, targets: list[tuple[Owner, tuple[str, ...]]],
                metrics: tuple[MetricWrapperBase, MetricWrapperBase], observed: float | None, *extra: str) -> None:
        """Count (``observed`` None) or observe in each target's series."""
        for metric, (owner, labels) in zip(metrics, targets, strict=False):
            child = self._child(metric, owner, *labels, *extra)
            child.inc() if observed is None else child.observe(observed)

    def _waited(self, key: str, controller: ReadSource, now: float) -> float:
        """upstream's QueuedWaitTime: since the workload was created, or last requeued (the Requeued
        condition's transition, for a workload this process has not seen evicted)."""
        rec = controller.records.get(key)
        since = rec.queued_since if rec is not None else None
        if since is None:
            obj = controller.cached("workloads", key)
            cond = next((c for c in ((obj or {}).get("status") or {}).get("conditions") or []
                         if c.get("type") == "Requeued"), None)
            if cond is not None:
                from pykueue.controller.core.translate import parse_time

                since = parse_time(cond.get("lastTransitionTime"))
        if since is None:
            since = views.creation_time(controller.engine, key)
        return max(0.0, now - since) if since else 0.0


def _pods_ready_since(obj: dict | None) -> float | None:
    """When the Workload's PodsReady condition turned True, None unless it is True (the cache's copy,
    as the API server last showed it: before the eviction's own status write)."""
    from pykueue.controller.core.translate import parse_time

    cond = next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == "PodsReady"),
                None)
    return parse_time(cond.get("lastTransitionTime")) if cond and cond.get("status") == "True" else None


class _EngineGauges(Collector):
    """upstream's per-ClusterQueue gauges, computed at scrape time from the engine; nothing while this
    replica is not the leader (a standby runs no engine, as upstream's reconcilers run on the leader only)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # families are only known at collect time; no name clash is possible with the others

    def collect(self) -> Iterator[Metric]:
        controller = self.metrics.controller
        if controller is None or not controller.ready.is_set():
            return
        engine = controller.engine
        config = views.metrics_config(engine)
        role = self.metrics.role()
        yield from self._cluster_queues(controller, config.cluster_queue_resources, role)
        if config.local_queues:
            yield from _local_queues(views.local_queue_metrics(engine), role)

    def _cluster_queues(self, controller: ReadSource, resources: bool, role: str) -> Iterator[Metric]:
        frl = ["cohort", "cluster_queue", "flavor", "resource"]
        pending = _Gauges("pending_workloads", "The number of pending workloads, per 'cluster_queue' and "
                          "'status' (active: in the admission queue; inadmissible: set aside until cluster "
                          "conditions change)", ["cluster_queue", "status"], role)
        reserving = _Gauges("reserving_active_workloads", "The number of Workloads that are reserving quota, "
                            "per 'cluster_queue'", ["cluster_queue"], role)
        admitted = _Gauges("admitted_active_workloads", "The number of admitted Workloads that are active "
                           "(unsuspended and not finished), per 'cluster_queue'", ["cluster_queue"], role)
        status = _Gauges("cluster_queue_status", "Reports 'cluster_queue' with its 'status' (pending, active "
                         "or terminating); 1 for the current one", ["cluster_queue", "status"], role)
        skips = _Gauges("admission_cycle_preemption_skips", "The number of Workloads in the ClusterQueue that "
                        "got preemption candidates but had to be skipped because other ClusterQueues needed "
                        "the same resources in the same cycle", ["cluster_queue"], role)
        nominal = _Gauges("cluster_queue_nominal_quota", "Reports the cluster_queue's resource nominal quota "
                          "within all the flavors", frl, role)
        borrowing = _Gauges("cluster_queue_borrowing_limit", "Reports the cluster_queue's resource borrowing "
                            "limit within all the flavors", frl, role)
        lending = _Gauges("cluster_queue_lending_limit", "Reports the cluster_queue's resource lending limit "
                          "within all the flavors", frl, role)
        reservation = _Gauges("cluster_queue_resource_reservation", "Reports the cluster_queue's total "
                              "resource reservation within all the flavors", frl, role)
        usage = _Gauges("cluster_queue_resource_usage", "Reports the cluster_queue's total resource usage "
                        "within all the flavors", frl, role)
        pending_resources = _Gauges("cluster_queue_resource_pending", "Reports the cluster_queue's total "
                                    "resources requested by its pending workloads (queued or inadmissible), per "
                                    "resource, before any flavor is assigned", ["cluster_queue", "resource"], role)
        share = _Gauges("cluster_queue_weighted_share", "Reports the maximum, among the resources the "
                        "cluster_queue provides, of the ratio of its usage above nominal quota to what the "
                        "cohort can lend, divided by its weight; 0 below nominal quota, NaN for a weight of 0 "
                        "while borrowing", ["cluster_queue", "cohort"], role)
        families = [pending, reserving, admitted, status, skips]
        if resources:  # metrics.enableClusterQueueResources
            families += [nominal, borrowing, lending, reservation, usage, pending_resources]
            if views.fair_sharing_enabled(controller.engine):
                families.append(share)
        for q in views.queue_metrics(controller.engine):
            pending.add_metric([q.name, "active"], q.pending_active)
            pending.add_metric([q.name, "inadmissible"], q.pending_inadmissible)
            reserving.add_metric([q.name], q.reserving)
            admitted.add_metric([q.name], q.admitted)
            skips.add_metric([q.name], q.preemption_skips)
            obj = controller.cached("clusterqueues", q.name)
            current = ("terminating" if obj and obj["metadata"].get("deletionTimestamp")
                       else "active" if q.active else "pending")
            for s in CQ_STATUSES:
                status.add_metric([q.name, s], 1.0 if s == current else 0.0)
            share.add_metric([q.name, q.cohort], q.weighted_share)
            for resource, amount in sorted(q.pending_requests.items()):
                pending_resources.add_metric([q.name, resource], resource_value(resource, amount))
            for flavor, resource, quota in q.quotas:
                labels = [q.cohort, q.name, flavor, resource]
                nominal.add_metric(labels, resource_value(resource, quota.nominal))
                borrowing.add_metric(labels, resource_value(resource, quota.borrowing_limit))
                lending.add_metric(labels, resource_value(resource, quota.lending_limit))
                reservation.add_metric(labels, resource_value(resource, q.reserved.get((flavor, resource), 0)))
                usage.add_metric(labels, resource_value(resource, q.in_use.get((flavor, resource), 0)))
        yield from families


class _Gauges(GaugeMetricFamily):
    """A gauge family whose samples all carry this replica's role as their last label."""

    def __init__(self, name: str, doc: str, labels: list[str], role: str) -> None:
        super().__init__(f"{NAMESPACE}_{name}", doc, labels=[*labels, ROLE])
        self.role = role

    def add_metric(self, labels, value, timestamp=None) -> None:  # noqa: ANN001 - prometheus_client's signature
        super().add_metric([*labels, self.role], value, timestamp)


def _local_queues(queues: list[views.LocalQueueMetrics], role: str) -> Iterator[Metric]:
    """upstream's LocalQueueMetrics gauges. Pending counts stay while the LocalQueue exists; the rest
    go with its ClusterQueue, as upstream's cache clears them."""
    lfr = [*LQ, "flavor", "resource"]
    reserving_doc, admitted_doc = "Workloads that are reserving quota", "admitted Workloads that are active"
    pending, reserving, admitted, status, reservation, usage = (_Gauges(f"local_queue_{name}", doc, labels, role)
        for name, doc, labels in (
            ("pending_workloads", "The number of pending workloads, per 'local_queue' and 'status' (active or "
             "inadmissible)", [*LQ, "status"]),
            ("reserving_active_workloads", f"The number of {reserving_doc}, per 'localQueue'", LQ),
            ("admitted_active_workloads", f"The number of {admitted_doc} (unsuspended and not finished), per "
             "'localQueue'", LQ),
            ("status", "Reports 'localQueue' with its 'active' status (True, False or Unknown); 1 for the "
             "current one", [*LQ, "active"]),
            ("resource_reservation", "Reports the localQueue's total resource reservation within all the "
             "flavors", lfr),
            ("resource_usage", "Reports the localQueue's total resource usage within all the flavors", lfr)))
    for q in queues:
        pending.add_metric([q.name, q.namespace, "active"], q.pending_active)
        pending.add_metric([q.name, q.namespace, "inadmissible"], q.pending_inadmissible)
        if not q.cluster_queue_exists:
            continue
        reserving.add_metric([q.name, q.namespace], q.reserving)
        admitted.add_metric([q.name, q.namespace], q.admitted)
        for a in LQ_ACTIVE:
            status.add_metric([q.name, q.namespace, a], 1.0 if a == q.active else 0.0)
        for flavor, resource in q.flavors:
            labels = [q.name, q.namespace, flavor, resource]
            reservation.add_metric(labels, resource_value(resource, q.reserved.get((flavor, resource), 0)))
            usage.add_metric(labels, resource_value(resource, q.in_use.get((flavor, resource), 0)))
    yield from (pending, reserving, admitted, status, reservation, usage)
