"""`/metrics`, `/healthz` and `/readyz` of a `pykueue controller` on the tier 2 cluster.

A 4 cpu ClusterQueue that preempts within itself: a low-priority 3 cpu Job is admitted, a 2 cpu Job
waits behind it, then a high-priority 3 cpu Job preempts the first. Every value asserted below is
worked out from that flow: two reservations and admissions, one preemption, two Workloads pending
(set aside: neither fits beside the 3 cpu now running), 3 of 4 cpu in use.

`/metrics` is served as by default: HTTPS, to a caller whose token the API server accepts and allows
`get` on the non-resource URL /metrics (the chart's metrics-reader ClusterRole); the module scrapes
with such a token, and checks the refusals (no token 401, a token without the role 403) and
`--metrics-secure=false`.

The module's controller runs under a Configuration that turns on the optional series
(`metrics.enableClusterQueueResources`, fair sharing for the weighted share; the LocalQueueMetrics
gate is on by default), so every series upstream's e2e metrics spec expects is checked for.
"""

from __future__ import annotations

import http.client
import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykueue.devcluster.cluster import free_port
from tests.e2e.callers import chart_role, https_get, service_account_token, status_reason
from tests.e2e.conftest import Kueue, eventually, is_true
from tests.e2e.objects import (
    PLAIN_FLAVOR,
    cluster_queue,
    job,
    local_queue,
    low_priority_job_running,
    priority_classes,
    running,
    suspended,
)

pytestmark = pytest.mark.e2e

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local test URL
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


READER: dict[str, str] = {}  # the token of a ServiceAccount bound to the metrics-reader role
CONFIG_FILE: dict[str, Path] = {}  # the module controller's Configuration


def scrape(port: int) -> Series:
    status, text = https_get(f"https://127.0.0.1:{port}/metrics", token=READER["token"])
    assert status == 200, text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(series: Series, metric: str, /, **labels: str) -> float | None:
    """The sample of ``metric`` with ``labels`` and replica_role standalone (no leader election here)."""
    return series.get((metric, frozenset({"replica_role": "standalone", **labels}.items())))


CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
metrics: {enableClusterQueueResources: true}
fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}
"""


@pytest.fixture(scope="module")
def ports(kueue: Kueue, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, Kueue]]:
    """This module's own controller, serving metrics and probes; the session's is stopped meanwhile
    (two controllers without leader election would both admit)."""
    config = tmp_path_factory.mktemp("metrics") / "config.yaml"
    config.write_text(CONFIG)
    CONFIG_FILE["path"] = config
    metrics_port, probe_port = free_port(), free_port()
    chart_role(kueue.cluster, "pykueue-metrics-reader")
    kueue.cluster.kubectl("create", "namespace", "metrics-scrapers")
    READER["token"] = service_account_token(kueue.cluster, "metrics-scrapers", "prometheus",
                                            cluster_role="pykueue-metrics-reader")
    READER["other"] = service_account_token(kueue.cluster, "metrics-scrapers", "nobody")
    kueue.stop()
    # a controller of its own: /metrics and the probes on ports this module knows (the shared one serves neither)
    own = Kueue(kueue.cluster, kueue.log.with_name("controller-metrics.log"), args=(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}", f"--health-probe-bind-address=127.0.0.1:{probe_port}"))
    try:
        own.start(config)
        yield metrics_port, probe_port, own
    finally:
        own.stop()
        kueue.cluster.kubectl("delete", "namespace", "metrics-scrapers", "--wait=false", check=False)
        kueue.cluster.kubectl("delete", "clusterrolebinding", "metrics-scrapers-prometheus", check=False)
        kueue.start()


def test_probes_answer(ports: tuple[int, int, Kueue]) -> None:
    _, probe_port, _ = ports
    assert get(f"http://127.0.0.1:{probe_port}/healthz") == (200, "ok")
    assert get(f"http://127.0.0.1:{probe_port}/readyz") == (200, "ok")
    assert get(f"http://127.0.0.1:{probe_port}/metrics")[0] == 404  # nothing but the probes there


def test_metrics_need_a_token_allowed_to_get_them(ports: tuple[int, int, Kueue]) -> None:
    metrics_port, _, _ = ports
    url = f"https://127.0.0.1:{metrics_port}/metrics"
    status, body = https_get(url)
    assert (status, status_reason(body)) == (401, "Unauthorized")
    status, body = https_get(url, token="not-a-token")
    assert status == 401
    status, body = https_get(url, token=READER["other"])  # authenticated, not bound to metrics-reader
    assert (status, status_reason(body)) == (403, "Forbidden"), body
    assert json.loads(body)["message"] == (
        'forbidden: User "system:serviceaccount:metrics-scrapers:nobody" cannot get path "/metrics"')
    # the front proxy's headers are no credential here, certificate or not
    status, _ = https_get(url, headers={"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters"})
    assert status == 401
    status, body = https_get(url, token=READER["token"])
    assert status == 200 and "# TYPE kueue_admission_attempts_total counter" in body
    with pytest.raises((OSError, http.client.HTTPException)):  # no plain HTTP on the secure port
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5)  # noqa: S310


def test_metrics_after_admission_pending_and_preemption(ports: tuple[int, int, Kueue], ns: str) -> None:
    metrics_port, _, own = ports
    low_priority_job_running(own, ns)
    own.apply(job("waiting", ns, "2", priority_class=f"{ns}-low"))
    eventually(lambda: value(scrape(metrics_port), "kueue_pending_workloads", cluster_queue=ns,
                             status="inadmissible") == 1, what="waiting set aside")
    own.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
    eventually(lambda: running(own, "high", ns) and suspended(own, "low", ns), what="high preempted low")

    def settled() -> Series | None:
        series = scrape(metrics_port)
        pending = (value(series, "kueue_pending_workloads", cluster_queue=ns, status="active"),
                   value(series, "kueue_pending_workloads", cluster_queue=ns, status="inadmissible"))
        return series if pending == (0, 2) else None

    series = eventually(settled, 30, what="both pending set aside")
    cq = {"cluster_queue": ns}
    low, high = {**cq, "priority_class": f"{ns}-low"}, {**cq, "priority_class": f"{ns}-high"}
    for klass in (low, high):  # one reservation and admission each, under the Job's PriorityClass
        assert value(series, "kueue_quota_reserved_workloads_total", **klass) == 1
        assert value(series, "kueue_admitted_workloads_total", **klass) == 1
        assert value(series, "kueue_admission_wait_time_seconds_count", **klass) == 1
        assert value(series, "kueue_quota_reserved_wait_time_seconds_count", **klass) == 1
        assert value(series, "kueue_admission_wait_time_seconds_bucket", **klass, le="+Inf") == 1
    assert value(series, "kueue_evicted_workloads_total", **low, reason="Preempted", underlying_cause="") == 1
    assert value(series, "kueue_preempted_workloads_total", preempting_cluster_queue=ns,
                 reason="InClusterQueue") == 1
    assert value(series, "kueue_reserving_active_workloads", **cq) == 1
    assert value(series, "kueue_admitted_active_workloads", **cq) == 1
    assert [value(series, "kueue_cluster_queue_status", **cq, status=s)
            for s in ("pending", "active", "terminating")] == [0, 1, 0]
    resource = {"cohort": "", "cluster_queue": ns, "flavor": "plain", "resource": "cpu"}
    assert value(series, "kueue_cluster_queue_nominal_quota", **resource) == 4
    assert value(series, "kueue_cluster_queue_resource_usage", **resource) == 3
    assert value(series, "kueue_cluster_queue_resource_reservation", **resource) == 3
    assert value(series, "kueue_cluster_queue_borrowing_limit", **resource) == math.inf  # none set
    assert value(series, "kueue_cluster_queue_lending_limit", **resource) == math.inf
    # Attempts: low and high reserved (success); waiting, and low after its eviction, did not fit.
    assert (value(series, "kueue_admission_attempts_total", result="success") or 0) >= 2
    assert (value(series, "kueue_admission_attempts_total", result="inadmissible") or 0) >= 1
    assert value(series, "kueue_admission_attempt_duration_seconds_count", result="success") == value(
        series, "kueue_admission_attempts_total", result="success")

    # A stopped ClusterQueue reports pending; its running Job is drained and counted as evicted.
    own.cluster.kubectl("patch", "clusterqueue", ns, "--type=merge", "-p", '{"spec":{"stopPolicy":"HoldAndDrain"}}')
    stopped = eventually(lambda: (s := scrape(metrics_port)) and value(
        s, "kueue_cluster_queue_status", **cq, status="pending") == 1 and s, 30, what="the queue pending")
    assert value(stopped, "kueue_cluster_queue_status", **cq, status="active") == 0
    eventually(lambda: value(scrape(metrics_port), "kueue_evicted_workloads_total", **high,
                             reason="ClusterQueueStopped", underlying_cause="") == 1, 30, what="drained")


# Every series upstream's e2e metrics spec expects (test/e2e/singlecluster/metrics_test.go of
# kubernetes-sigs/kueue: "should ensure the default metrics are available", "...the admission check
# metrics...", "...the eviction and preemption metrics..."), and by which labels each names its queue:
# "" none, "cq" cluster_queue (preempting_cluster_queue for preempted_workloads_total), "lq" name and
# namespace of the LocalQueue.
UPSTREAM_SPEC = [
    ("kueue_admission_attempts_total", ""),
    ("kueue_admission_attempt_duration_seconds", ""),
    ("kueue_pending_workloads", "cq"),
    ("kueue_reserving_active_workloads", "cq"),
    ("kueue_admitted_active_workloads", "cq"),
    ("kueue_quota_reserved_workloads_total", "cq"),
    ("kueue_quota_reserved_wait_time_seconds", "cq"),
    ("kueue_admitted_workloads_total", "cq"),
    ("kueue_admission_wait_time_seconds", "cq"),
    ("kueue_cluster_queue_resource_usage", "cq"),
    ("kueue_cluster_queue_status", "cq"),
    ("kueue_cluster_queue_resource_reservation", "cq"),
    ("kueue_cluster_queue_resource_pending", "cq"),
    ("kueue_cluster_queue_nominal_quota", "cq"),
    ("kueue_cluster_queue_borrowing_limit", "cq"),
    ("kueue_cluster_queue_lending_limit", "cq"),
    ("kueue_cluster_queue_weighted_share", "cq"),
    ("kueue_local_queue_pending_workloads", "lq"),
    ("kueue_local_queue_reserving_active_workloads", "lq"),
    ("kueue_local_queue_admitted_active_workloads", "lq"),
    ("kueue_local_queue_quota_reserved_workloads_total", "lq"),
    ("kueue_local_queue_quota_reserved_wait_time_seconds", "lq"),
    ("kueue_local_queue_admitted_workloads_total", "lq"),
    ("kueue_local_queue_admission_wait_time_seconds", "lq"),
    ("kueue_local_queue_status", "lq"),
    ("kueue_admission_checks_wait_time_seconds", "cq"),
    ("kueue_local_queue_admission_checks_wait_time_seconds", "lq"),
    ("kueue_admission_cycle_preemption_skips", "cq"),
    ("kueue_evicted_workloads_total", "cq"),
    ("kueue_evicted_workloads_once_total", "cq"),
    ("kueue_preempted_workloads_total", "cq"),
    ("kueue_local_queue_evicted_workloads_total", "lq"),
    ("kueue_local_queue_resource_reservation", "lq"),
    ("kueue_local_queue_resource_usage", "lq"),
]
# What upstream's spec expects gone once the workload and its ClusterQueue are deleted (the LocalQueue
# stays, with its pending counts at 0).
UPSTREAM_DELETED = [
    name for name, scope in UPSTREAM_SPEC
    if scope == "cq" and name != "kueue_cluster_queue_weighted_share"
    or scope == "lq" and name != "kueue_local_queue_pending_workloads"
]


def present(series: Series, name: str, labels: dict[str, str]) -> bool:
    """A sample of ``name`` (or of its histogram's _bucket/_sum/_count) carrying ``labels``."""
    wanted = set(labels.items())
    return any((n == name or n.startswith(f"{name}_")) and wanted <= set(ls) for n, ls in series)


def scope_labels(scope: str, name: str, ns: str) -> dict[str, str]:
    if scope == "lq":
        return {"name": "lq", "namespace": ns}
    if scope == "cq":
        return {"preempting_cluster_queue" if name == "kueue_preempted_workloads_total" else "cluster_queue": ns}
    return {}


def test_every_series_of_upstreams_e2e_spec(ports: tuple[int, int, Kueue], ns: str) -> None:
    """One flow through a 4 cpu ClusterQueue with an admission check: `low` (3 cpu) reserves quota,
    its check turns Ready and it is admitted; `high` (3 cpu, higher priority) preempts it. Then every
    series of upstream's spec is there with its queue's labels; once the Jobs and the ClusterQueue are
    deleted, the queue's series are gone but for the LocalQueue's pending counts, at 0."""
    metrics_port, _, own = ports
    own.apply(PLAIN_FLAVOR)
    own.apply(priority_classes(ns))
    own.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: {ns}-check}}
spec: {{controllerName: test.pykueue.dev/check}}
""")
    own.apply(cluster_queue(ns, "4", preemption="{withinClusterQueue: LowerPriority}",
                            extra=f"admissionChecksStrategy: {{admissionChecks: [{{name: {ns}-check}}]}}"))
    own.apply(local_queue(ns, ns))
    own.apply(job("low", ns, "3", priority_class=f"{ns}-low"))
    wl = eventually(lambda: (w := own.workload_of("low", ns)) and is_true(w, "QuotaReserved") and w,
                    what="low reserved quota")
    patch = json.dumps({"status": {"admissionChecks": [{
        "name": f"{ns}-check", "state": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    own.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--subresource=status",
                        "--type=merge", "-p", patch)
    eventually(lambda: running(own, "low", ns), what="low admitted once its check is Ready")
    own.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
    eventually(lambda: suspended(own, "low", ns) and is_true(own.workload_of("high", ns), "QuotaReserved"),
               what="high preempted low")

    def missing() -> list[str]:
        series = scrape(metrics_port)
        return [name for name, scope in UPSTREAM_SPEC if not present(series, name, scope_labels(scope, name, ns))]

    eventually(lambda: not missing(), 30, what="every series of upstream's spec")
    series = scrape(metrics_port)
    lq = {"name": "lq", "namespace": ns}
    low, high = {"priority_class": f"{ns}-low"}, {"priority_class": f"{ns}-high"}
    assert value(series, "kueue_admission_checks_wait_time_seconds_count", cluster_queue=ns, **low) == 1
    assert value(series, "kueue_local_queue_admission_checks_wait_time_seconds_count", **lq, **low) == 1
    assert value(series, "kueue_local_queue_evicted_workloads_total", **lq, reason="Preempted",
                 underlying_cause="", **low) == 1
    assert value(series, "kueue_evicted_workloads_once_total", cluster_queue=ns, reason="Preempted",
                 underlying_cause="", **low) == 1
    for klass in (low, high):  # low reserved, then high
        assert value(series, "kueue_local_queue_quota_reserved_workloads_total", **lq, **klass) == 1
    assert value(series, "kueue_preempted_workloads_total", preempting_cluster_queue=ns, reason="InClusterQueue") == 1
    assert value(series, "kueue_local_queue_resource_reservation", **lq, flavor="plain", resource="cpu") == 3
    assert value(series, "kueue_local_queue_resource_usage", **lq, flavor="plain", resource="cpu") == 0  # checks

    own.cluster.kubectl("delete", "job", "low", "high", "-n", ns, "--wait=true", "--timeout=60s", timeout=90)
    eventually(lambda: not own.items("workloads", ns), 60, what="the Workloads gone")
    own.cluster.kubectl("delete", "clusterqueue", ns, "--wait=true", "--timeout=60s", timeout=90)

    def lingering() -> list[str]:
        series = scrape(metrics_port)
        return [name for name in UPSTREAM_DELETED
                if present(series, name, scope_labels(dict(UPSTREAM_SPEC)[name], name, ns))]

    eventually(lambda: not lingering(), 30, what="the deleted queue's series gone")
    series = scrape(metrics_port)
    assert value(series, "kueue_local_queue_pending_workloads", **lq, status="active") == 0
    assert value(series, "kueue_local_queue_pending_workloads", **lq, status="inadmissible") == 0


def test_plain_http_when_asked(ports: tuple[int, int, Kueue]) -> None:
    """`--metrics-secure=false`: the same port answers plain HTTP, to anyone (last: it restarts the
    module's controller)."""
    metrics_port, _, own = ports
    own.stop()
    own.args = (*own.args, "--metrics-secure=false")
    own.start(CONFIG_FILE["path"])
    status, text = eventually(lambda: (r := get(f"http://127.0.0.1:{metrics_port}/metrics")) and r[0] == 200 and r,
                              what="plain metrics")
    assert "# TYPE kueue_admission_attempts_total counter" in text
