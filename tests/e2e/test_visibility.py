"""The visibility API (visibility.kueue.x-k8s.io) behind the API aggregator, served by `pykueue controller`
on its own port (`--visibility-port`, as upstream's visibility server), read with `kubectl get --raw`
and `pykueue pending`.

The controller runs outside the cluster: the APIServices point at an ExternalName Service (named as
the chart's visibility Service, beside the webhook Service) naming localhost on the controller's
visibility port. The test stops the session's controller, runs its own with the webhook and
visibility servers on (its certificate names both Services; it patches its CA into the APIServices),
and starts the session's controller again afterwards. The visibility port answers only callers the
API server vouches for (the aggregator's front-proxy certificate, a client certificate, a token), each
with what RBAC allows them; the webhook port serves no visibility path at all.

The aggregator itself reads the backend too (discovery every minute, OpenAPI v2 and v3): a second test
runs the controller as from a kubeconfig (its own APIServices, for its loopback port) and waits for the
API server's aggregated discovery and merged OpenAPI to hold the group, then checks that
kube-controller-manager reports no stale visibility group and namespaces delete at once, before and after
the controller stops.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pykueue.controller.webhooks import names
from pykueue.devcluster.cluster import free_port
from tests.e2e.callers import (
    as_user,
    chart_role,
    front_proxy,
    https_get,
    service_account_token,
    status_reason,
)
from tests.e2e.conftest import REPO, Kueue, eventually, forget_local_webhooks, is_true

pytestmark = pytest.mark.e2e

GROUP = "visibility.kueue.x-k8s.io"
SERVICE = "vis"  # the webhook Service: the certificate's CN is <service>.<namespace>.svc, at most 64 characters
VISIBILITY_SERVICE = names.visibility_service(SERVICE)  # vis-visibility-server, which the certificate names too


def _workload(name: str, ns: str, queue: str, priority: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": queue, "priority": priority, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _api_service(version: str, ns: str, port: int) -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.{GROUP}"},
            "spec": {"group": GROUP, "version": version, "groupPriorityMinimum": 100,
                     "versionPriority": 200 if version == "v1beta2" else 100, "insecureSkipTLSVerify": False,
                     "service": {"name": VISIBILITY_SERVICE, "namespace": ns, "port": port}}}


def _raw(kueue: Kueue, path: str, check: bool = True) -> Any:
    r = kueue.cluster.kubectl("get", "--raw", path, check=check)
    return json.loads(r.stdout) if r.returncode == 0 else r


def _rows(summary: dict[str, Any]) -> list[tuple[str, str, int, int, int]]:
    return [(i["metadata"]["name"], i["localQueueName"], i["priority"], i["positionInClusterQueue"],
             i["positionInLocalQueue"]) for i in summary["items"]]


def test_pending_workloads_through_the_aggregator(kueue: Kueue, ns: str, tmp_path) -> None:
    cq = f"{ns}-cq"[:63]
    port, webhook_port = free_port(), free_port()
    kueue.apply([
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "plain"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "plain", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
        *({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": lq, "namespace": ns},
           "spec": {"clusterQueue": cq}} for lq in ("lq-a", "lq-b")),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": VISIBILITY_SERVICE, "namespace": ns},
         "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port}]}},
        *(_api_service(v, ns, port) for v in ("v1beta2", "v1beta1")),
    ])
    kueue.stop()
    mine = Kueue(kueue.cluster, tmp_path / "visibility-controller.log", args=(
        f"--visibility-port={port}", "--visibility-bind-address=127.0.0.1", f"--webhook-port={webhook_port}",
        f"--webhook-cert-dir={tmp_path / 'certs'}", f"--webhook-service={SERVICE}", f"--webhook-namespace={ns}",
        "--local-webhooks=off"))  # the APIServices are the test's: no admission webhooks registered
    try:
        mine.start()
        # the CA bundle is patched in at start: the aggregator trusts the controller's certificate
        for version in ("v1beta2", "v1beta1"):
            obj = kueue.get("apiservice", f"{version}.{GROUP}")
            assert obj and obj["spec"].get("caBundle"), obj
        kueue.cluster.kubectl("wait", "--for=condition=Available", f"apiservice/v1beta2.{GROUP}",
                              f"apiservice/v1beta1.{GROUP}", "--timeout=60s")

        group = _raw(kueue, f"/apis/{GROUP}")
        assert group["kind"] == "APIGroup" and group["preferredVersion"]["version"] == "v1beta2"
        resources = _raw(kueue, f"/apis/{GROUP}/v1beta2")
        assert {r["name"] for r in resources["resources"]} >= {
            "clusterqueues/pendingworkloads", "localqueues/pendingworkloads"}

        # one workload takes the whole quota; the others wait, in priority order
        kueue.apply([_workload("first", ns, "lq-a", 0)])
        eventually(lambda: is_true(kueue.get("workloads.kueue.x-k8s.io", "first", ns), "QuotaReserved"),
                   what="first admitted")
        kueue.apply([_workload("a-low", ns, "lq-a", 2), _workload("b-low", ns, "lq-b", 1),
                     _workload("a-high", ns, "lq-a", 10), _workload("b-mid", ns, "lq-b", 5)])
        base = f"/apis/{GROUP}/v1beta2"
        expected = [("a-high", "lq-a", 10, 0, 0), ("b-mid", "lq-b", 5, 1, 0), ("a-low", "lq-a", 2, 2, 1),
                    ("b-low", "lq-b", 1, 3, 1)]
        summary = eventually(lambda: (s := _raw(kueue, f"{base}/clusterqueues/{cq}/pendingworkloads"))
                             and len(s["items"]) == 4 and s, what="4 pending workloads")
        assert summary["kind"] == "PendingWorkloadsSummary" and summary["apiVersion"] == f"{GROUP}/v1beta2"
        assert _rows(summary) == expected
        item = summary["items"][0]
        assert item["metadata"]["namespace"] == ns and item["metadata"]["creationTimestamp"].endswith("Z")

        # limit and offset, as upstream: a window of the ClusterQueue's order
        assert _rows(_raw(kueue, f"{base}/clusterqueues/{cq}/pendingworkloads?limit=2&offset=1")) == expected[1:3]
        # a LocalQueue: its own workloads; the window counts only them
        lq_a = _raw(kueue, f"{base}/namespaces/{ns}/localqueues/lq-a/pendingworkloads")
        assert _rows(lq_a) == [expected[0], expected[2]]
        assert _rows(_raw(kueue, f"{base}/namespaces/{ns}/localqueues/lq-b/pendingworkloads?offset=1")) == [
            expected[3]]
        # v1beta1 too
        old = _raw(kueue, f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads")
        assert old["apiVersion"] == f"{GROUP}/v1beta1" and _rows(old) == expected

        # unknown queues: NotFound
        r = _raw(kueue, f"{base}/clusterqueues/no-such-cq/pendingworkloads", check=False)
        assert r.returncode != 0 and "(NotFound)" in r.stderr and '"no-such-cq" not found' in r.stderr, r.stderr
        r = _raw(kueue, f"{base}/namespaces/{ns}/localqueues/nope/pendingworkloads", check=False)
        assert r.returncode != 0 and "not found" in r.stderr, r.stderr

        _only_who_may(kueue, ns, cq, port, tmp_path / "certs" / "ca.crt", expected)
        _not_on_the_webhook_port(kueue, ns, cq, webhook_port, tmp_path / "certs" / "ca.crt")

        # `pykueue pending` prefers the API now that it is served
        cli = subprocess.run([sys.executable, "-m", "pykueue.cli", "pending", "clusterqueue", cq, "--kubeconfig",
                              str(kueue.cluster.kubeconfig), "-o", "json"], capture_output=True, text=True, cwd=REPO)
        assert cli.returncode == 0, cli.stderr
        assert _rows(json.loads(cli.stdout)) == expected
        cli = subprocess.run([sys.executable, "-m", "pykueue.cli", "pending", "clusterqueue", cq, "--kubeconfig",
                              str(kueue.cluster.kubeconfig)], capture_output=True, text=True, cwd=REPO)
        assert cli.returncode == 0, cli.stderr
        assert "From the visibility API visibility.kueue.x-k8s.io." in cli.stdout, cli.stdout
    finally:
        mine.stop()
        for version in ("v1beta2", "v1beta1"):
            kueue.cluster.kubectl("delete", "apiservice", f"{version}.{GROUP}", "--ignore-not-found", check=False)
        kueue.cluster.kubectl("delete", "workloads.kueue.x-k8s.io", "--all", "-n", ns, "--wait=false", check=False)
        kueue.cluster.kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
        kueue.start()


def _only_who_may(kueue: Kueue, ns: str, cq: str, port: int, ca: Path,
                  expected: list[tuple[str, str, int, int, int]]) -> None:
    """The controller's own port answers only callers the API server vouches for, each with what RBAC
    lets them see; through the aggregator the same."""
    cluster = kueue.cluster
    chart_role(cluster, "pykueue-pending-workloads-lq-viewer")
    viewer = service_account_token(cluster, ns, "viewer", cluster_role="pykueue-pending-workloads-lq-viewer",
                                   role_in_namespace=True)
    nobody = service_account_token(cluster, ns, "nobody")
    viewer_name = f"system:serviceaccount:{ns}:viewer"
    direct = f"https://127.0.0.1:{port}/apis/{GROUP}/v1beta2"
    own_lq = f"/namespaces/{ns}/localqueues/lq-a/pendingworkloads"
    other_lq = "/namespaces/default/localqueues/lq-a/pendingworkloads"
    cq_path = f"/clusterqueues/{cq}/pendingworkloads"

    def call(path: str, **kw: Any) -> tuple[int, str]:
        return https_get(direct + path, ca=ca, **kw)

    # nobody at all, for the pending workloads and for discovery
    for path in (cq_path, own_lq, ""):
        status, body = call(path)
        assert (status, status_reason(body)) == (401, "Unauthorized"), (path, body)
    # the front proxy's headers without its certificate, and with another CA's certificate
    assert call(cq_path, headers=as_user("pykueue-admin", "system:masters"))[0] == 401
    pki = cluster.directory / "pki"
    scheduler = (pki / "scheduler.crt", pki / "scheduler.key")  # the client CA's: its own user, headers ignored
    status, body = call(cq_path, cert=scheduler, headers=as_user("pykueue-admin", "system:masters"))
    assert status == 403 and 'User "system:kube-scheduler"' in json.loads(body)["message"], body
    # a token the API server accepts, without rights
    status, body = call(own_lq, token=nobody)
    assert (status, status_reason(body)) == (403, "Forbidden"), body
    # a namespaced viewer: its own LocalQueue only
    status, body = call(own_lq, token=viewer)
    assert status == 200, body
    assert _rows(json.loads(body)) == [expected[0], expected[2]]
    for path in (other_lq, cq_path):
        status, body = call(path, token=viewer)
        assert status == 403, (path, body)
    assert json.loads(call(cq_path, token=viewer)[1])["message"] == (
        f'clusterqueues.{GROUP} "{cq}" is forbidden: User "{viewer_name}" cannot get resource '
        f'"clusterqueues/pendingworkloads" in API group "{GROUP}" at the cluster scope')
    # the front proxy's certificate: its headers name the user
    status, body = call(own_lq, cert=front_proxy(cluster), headers=as_user(viewer_name, "system:authenticated"))
    assert status == 200 and _rows(json.loads(body)) == [expected[0], expected[2]], body
    assert call(cq_path, cert=front_proxy(cluster), headers=as_user(viewer_name))[0] == 403
    # through the aggregator, with the viewer's and the rightless token
    api = f"{cluster.server}/apis/{GROUP}/v1beta2"
    cluster_ca = pki / "ca.crt"
    status, body = https_get(api + own_lq, token=viewer, ca=cluster_ca)
    assert status == 200 and _rows(json.loads(body)) == [expected[0], expected[2]], body
    for path, token in ((other_lq, viewer), (cq_path, viewer), (own_lq, nobody)):
        assert https_get(api + path, token=token, ca=cluster_ca)[0] == 403, path


def _not_on_the_webhook_port(kueue: Kueue, ns: str, cq: str, port: int, ca: Path) -> None:
    """The webhook port has no visibility path, whoever asks (404, not 401: nothing there to guard),
    and still serves its own /healthz."""
    cluster = kueue.cluster
    base = f"https://127.0.0.1:{port}"
    for path in (f"/apis/{GROUP}/v1beta2/clusterqueues/{cq}/pendingworkloads",
                 f"/apis/{GROUP}/v1beta2/namespaces/{ns}/localqueues/lq-a/pendingworkloads",
                 f"/apis/{GROUP}/v1beta2", f"/apis/{GROUP}", "/apis"):
        assert https_get(base + path, ca=ca)[0] == 404, path
        status, _ = https_get(base + path, ca=ca, cert=front_proxy(cluster), headers=as_user("x", "system:masters"))
        assert status == 404, path
    assert https_get(base + "/healthz", ca=ca) == (200, "ok")


# --- what the API aggregator itself fetches (issue 38) ---------------------------------------------------

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
STALE = f"stale GroupVersion discovery: {GROUP}"


def _as_admin(kueue: Kueue, path: str, accept: str = "application/json") -> tuple[int, str]:
    pki = kueue.cluster.directory / "pki"
    return https_get(kueue.cluster.server + path, cert=(pki / "admin.crt", pki / "admin.key"), ca=pki / "ca.crt",
                     headers={"Accept": accept})


def _discovered(kueue: Kueue) -> dict[str, Any] | None:
    """The visibility group in the API server's aggregated discovery, once both versions are there,
    fresh and with their resources (a version the aggregator failed to read is Stale and empty)."""
    status, body = _as_admin(kueue, "/apis", AGGREGATED_V2)
    if status != 200:
        return None
    group = next((g for g in json.loads(body).get("items") or [] if g["metadata"]["name"] == GROUP), None)
    versions = {v["version"]: v for v in (group or {}).get("versions") or []}
    if set(versions) != {"v1beta2", "v1beta1"} or any(
            v.get("freshness") == "Stale" or not v.get("resources") for v in versions.values()):
        return None
    return versions


def _has_openapi(kueue: Kueue) -> bool:
    """The API server's merged OpenAPI v2 and v3 documents hold the visibility API."""
    status, body = _as_admin(kueue, "/openapi/v2")
    if status != 200 or f"/apis/{GROUP}/v1beta2/clusterqueues/{{name}}/pendingworkloads" not in json.loads(body)["paths"]:
        return False
    status, body = _as_admin(kueue, "/openapi/v3")
    return status == 200 and f"apis/{GROUP}/v1beta2" in json.loads(body)["paths"]


def _namespace_deletes(kueue: Kueue, name: str, within: float) -> None:
    cluster = kueue.cluster
    cluster.kubectl("create", "namespace", name)
    cluster.kubectl("delete", "namespace", name, "--wait=false")
    try:
        eventually(lambda: kueue.get("namespace", name) is None, within, what=f"namespace {name} deleted")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; conditions: {((kueue.get('namespace', name) or {}).get('status') or {})}") \
            from None


def test_the_aggregator_reads_the_visibility_api_and_namespaces_still_delete(kueue: Kueue, ns: str,
                                                                              tmp_path: Path) -> None:
    """A local controller (the visibility API registered for its loopback port, as `pykueue controller`
    does from a kubeconfig): the aggregator's discovery and OpenAPI fetches succeed, so
    kube-controller-manager sees no stale visibility group and an empty namespace deletes at once;
    once the controller stops, its APIServices are gone and namespaces still delete."""
    cluster = kueue.cluster
    kcm_log = cluster.directory / "logs" / "kube-controller-manager.log"
    kueue.stop()
    mine = Kueue(cluster, tmp_path / "controller.log", args=(
        f"--visibility-port={free_port()}", "--visibility-bind-address=127.0.0.1", f"--webhook-port={free_port()}",
        f"--webhook-cert-dir={tmp_path / 'certs'}"))
    try:
        mine.start()
        assert b"visibility API registered" in mine.log.read_bytes(), mine._tail()
        # settled: the API server serves what the aggregator read from the controller
        versions = eventually(lambda: _discovered(kueue), 90, 1, what="the visibility group, fresh, in /apis")
        resources = {r["resource"]: r for r in versions["v1beta2"]["resources"]}
        assert [s["subresource"] for s in resources["localqueues"]["subresources"]] == ["pendingworkloads"]
        eventually(lambda: _has_openapi(kueue), 90, 1, what="the visibility paths in /openapi/v2 and /openapi/v3")
        offset = kcm_log.stat().st_size
        _namespace_deletes(kueue, f"{ns}-empty", 15)
        stale = [line for line in kcm_log.read_bytes()[offset:].decode(errors="replace").splitlines()
                 if STALE in line]
        assert not stale, stale[:3]
    finally:
        mine.stop()
        print("\n--- visibility controller log (tail) ---\n" + mine._tail(lines=30))
        forget_local_webhooks(cluster)
        kueue.start()
    # stopped: its APIServices are removed, so nothing waits on a backend that is gone
    for version in ("v1beta2", "v1beta1"):
        assert kueue.get("apiservice", f"{version}.{GROUP}") is None
    _namespace_deletes(kueue, f"{ns}-after", 15)
