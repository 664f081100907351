"""`/metrics`, `/healthz` and `/readyz` of a `pykueue controller` on the tier 2 cluster.

A 4 cpu ClusterQueue that preempts within itself: a low-priority 3 cpu Job is admitted, a 2 cpu Job
waits behind it, then a high-priority 3 cpu Job preempts the first. Every value asserted below is
worked out from that flow: two reservations and admissions, one preemption, two Workloads pending
(set aside: neither fits beside the 3 cpu now running), 3 of 4 cpu in use.

`/metrics` is served as by default: HTTPS, to a caller whose token the API server accepts and allows
`get` on the non-resource URL /metrics (the chart's metrics-reader ClusterRole); the module scrapes
with such a token, and checks the refusals (no token 401, a token without the role 403) and
`--metrics-secure=false`.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.callers import chart_role, https_get, service_account_token, status_reason
from tests.e2e.conftest import Kueue, eventually
from tests.e2e.test_controller import job, low_priority_job_running, running, suspended

pytestmark = pytest.mark.e2e

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local test URL
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


READER: dict[str, str] = {}  # the token of a ServiceAccount bound to the metrics-reader role


def scrape(port: int) -> Series:
    status, text = https_get(f"https://127.0.0.1:{port}/metrics", token=READER["token"])
    assert status == 200, text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(series: Series, name: str, **labels: str) -> float | None:
    return series.get((name, frozenset(labels.items())))


@pytest.fixture(scope="module")
def ports(kueue: Kueue) -> Iterator[tuple[int, int, Kueue]]:
    """This module's own controller, serving metrics and probes; the session's is stopped meanwhile
    (two controllers without leader election would both admit)."""
    metrics_port, probe_port = free_port(), free_port()
    chart_role(kueue.cluster, "pykueue-metrics-reader")
    kueue.cluster.kubectl("create", "namespace", "metrics-scrapers")
    READER["token"] = service_account_token(kueue.cluster, "metrics-scrapers", "prometheus",
                                            cluster_role="pykueue-metrics-reader")
    READER["other"] = service_account_token(kueue.cluster, "metrics-scrapers", "nobody")
    kueue.stop()
    own = Kueue(kueue.cluster, kueue.log.with_name("controller-metrics.log"), args=(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}", f"--health-probe-bind-address=127.0.0.1:{probe_port}"))
    try:
        own.start()
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
    assert value(series, "kueue_quota_reserved_workloads_total", **cq) == 2
    assert value(series, "kueue_admitted_workloads_total", **cq) == 2
    assert value(series, "kueue_evicted_workloads_total", **cq, reason="Preempted", underlying_cause="") == 1
    assert value(series, "kueue_preempted_workloads_total", preempting_cluster_queue=ns,
                 reason="InClusterQueue") == 1
    assert value(series, "kueue_admission_wait_time_seconds_count", **cq) == 2
    assert value(series, "kueue_quota_reserved_wait_time_seconds_count", **cq) == 2
    assert value(series, "kueue_admission_wait_time_seconds_bucket", **cq, le="+Inf") == 2
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
    eventually(lambda: value(scrape(metrics_port), "kueue_evicted_workloads_total", **cq,
                             reason="ClusterQueueStopped", underlying_cause="") == 1, 30, what="drained")


def test_plain_http_when_asked(ports: tuple[int, int, Kueue]) -> None:
    """`--metrics-secure=false`: the same port answers plain HTTP, to anyone (last: it restarts the
    module's controller)."""
    metrics_port, _, own = ports
    own.stop()
    own.args = (*own.args, "--metrics-secure=false")
    own.start()
    status, text = eventually(lambda: (r := get(f"http://127.0.0.1:{metrics_port}/metrics")) and r[0] == 200 and r,
                              what="plain metrics")
    assert "# TYPE kueue_admission_attempts_total counter" in text
