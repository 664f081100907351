"""Tier 3: a real kubelet with containerd beside kwok's nodes, the project's image on it, and the
chart installed with helm as Kueue's users install it; its controller pod runs on the real node."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster import helm, image, node
from pykueue.devcluster.cluster import FAKE_NODE_TAINT, DevCluster
from tests.e2e.callers import https_get

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
RELEASE_NS = "pykueue-system"
LONG_POD_READY: list[Any] = []  # kwok's long-running pod: when it was seen Ready (monotonic), and since when


def eventually(check, timeout: float = 120.0, what: str = ""):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {last!r}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    c = DevCluster(tmp_path_factory.mktemp("tier3"), tier=3)
    try:
        c.start(timeout=240)
        yield c
    finally:
        c.stop()


def _get(cluster: DevCluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _pod(name: str, namespace: str, args: list[str]) -> str:
    """A pod running the project's image under the chart's security context."""
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532},
            "containers": [{
                "name": "main", "image": image.ref(), "imagePullPolicy": "Never", "args": args,
                "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            }],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    })


def test_the_real_node_runs_the_projects_image_and_kwoks_nodes_are_tainted(cluster: DevCluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in _get(cluster, "nodes")["items"]}
    real = nodes.pop(node.NAME)
    assert real["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert nodes and all(FAKE_NODE_TAINT in n["spec"].get("taints", []) for n in nodes.values())
    cluster.kubectl("apply", "-f", "-", input=_pod("version", "default", ["--version"]))
    done = eventually(lambda: (p := _get(cluster, "pod", "version", "-n", "default"))["status"].get("phase")
                      in ("Succeeded", "Failed") and p, what="the pod to finish")
    assert done["spec"]["nodeName"] == node.NAME
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    logs = cluster.kubectl("logs", "version", "-n", "default").stdout
    assert image.version() in logs


def test_fake_nodes_hold_a_lease_that_kwok_renews(cluster: DevCluster) -> None:
    """Without a node Lease kube-controller-manager marked kwok's nodes Unknown 50 s after their last
    status heartbeat (every 10-20 min in the stages) and set their pods' Ready to False."""
    fake = [n["metadata"]["name"] for n in _get(cluster, "nodes")["items"] if n["metadata"]["name"] != node.NAME]
    first = {n: _get(cluster, "lease", n, "-n", "kube-node-lease")["spec"]["renewTime"] for n in fake}
    eventually(lambda: all(_get(cluster, "lease", n, "-n", "kube-node-lease")["spec"]["renewTime"] != first[n]
                           for n in fake), timeout=60, what="kwok to renew every fake node's Lease")
    # A pod kwok runs for ten minutes: checked again by the test after the install tests, minutes later.
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "long", "namespace": "default",
                     "annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "10m"}},
        "spec": {"nodeName": fake[0], "tolerations": [{**FAKE_NODE_TAINT, "operator": "Equal"}],
                 "containers": [{"name": "main", "image": "busybox"}]}}))
    pod = eventually(lambda: (p := _get(cluster, "pod", "long", "-n", "default")) and _ready(p) and p,
                     what="kwok's pod to be Ready")
    LONG_POD_READY.extend([time.monotonic(), _ready_since(pod)])


def test_helm_install_runs_the_controller_on_the_real_node_and_admits_a_job(cluster: DevCluster) -> None:
    env = {"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(cluster.directory)}
    result = subprocess.run([str(helm.ensure()), "install", "pykueue", str(REPO / "charts" / "pykueue"),
                             "-n", RELEASE_NS, "--create-namespace", "--wait", "--timeout", "240s"],
                            capture_output=True, text=True, env=env, timeout=300)
    pods = _get(cluster, "pods", "-n", RELEASE_NS)["items"]
    assert result.returncode == 0, (result.stderr.strip(), [p.get("status") for p in pods],
                                    cluster.kubectl("logs", "-n", RELEASE_NS, "-l", "app.kubernetes.io/name=pykueue",
                                                    "--tail=20", check=False).stdout)
    assert [p["spec"]["nodeName"] for p in pods] == [node.NAME]
    ns = "smoke"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory"],
             "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "2"},
                                                          {"name": "memory", "nominalQuota": "1Gi"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": ns},
         "spec": {"clusterQueue": "cq"}},
    ]))
    _run_version_job(cluster, "smoke", ns)
    wl = _get(cluster, "workloads", "-n", ns)["items"]
    assert len(wl) == 1
    (admitted,) = [c for c in wl[0]["status"]["conditions"] if c["type"] == "Admitted"]
    assert admitted["status"] == "True"
    job_pods = _get(cluster, "pods", "-n", ns)["items"]
    # the webhook created the Job suspended: its pod appeared only once the controller admitted it
    assert all(p["metadata"]["creationTimestamp"] >= admitted["lastTransitionTime"] for p in job_pods)
    assert [(p["spec"]["nodeName"], p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"])
            for p in job_pods] == [(node.NAME, 0)]


AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
VISIBILITY = "visibility.kueue.x-k8s.io"


def _as_admin(cluster: DevCluster, path: str, accept: str = "application/json") -> tuple[int, str]:
    pki = cluster.directory / "pki"
    return https_get(cluster.server + path, cert=(pki / "admin.crt", pki / "admin.key"), ca=pki / "ca.crt",
                     headers={"Accept": accept})


def _visibility_discovered(cluster: DevCluster) -> bool:
    """Both visibility versions in the API server's aggregated discovery, fresh, with resources."""
    status, body = _as_admin(cluster, "/apis", AGGREGATED_V2)
    group = next((g for g in json.loads(body).get("items") or [] if g["metadata"]["name"] == VISIBILITY), None) \
        if status == 200 else None
    versions = {v["version"]: v for v in (group or {}).get("versions") or []}
    return set(versions) == {"v1beta2", "v1beta1"} and all(
        v.get("freshness") != "Stale" and v.get("resources") for v in versions.values())


def test_the_installed_controller_serves_visibility_and_metrics_through_its_services(cluster: DevCluster) -> None:
    """After the install test, in the cluster as a user meets it: the aggregator reads the visibility API
    through its Service (fresh aggregated discovery, the merged OpenAPI), so kube-controller-manager sees
    no stale group and an empty namespace deletes in seconds; pending workloads answer through the API
    server; /metrics answers over HTTPS through its Service to a token bound to the metrics-reader role,
    and 401 without one."""
    eventually(lambda: _visibility_discovered(cluster), 120, what="the visibility group, fresh, in /apis")
    status, body = _as_admin(cluster, "/openapi/v2")
    assert status == 200 and f"/apis/{VISIBILITY}/v1beta2/clusterqueues/{{name}}/pendingworkloads" in body
    summary = json.loads(cluster.kubectl(
        "get", "--raw", f"/apis/{VISIBILITY}/v1beta2/clusterqueues/cq/pendingworkloads").stdout)
    assert summary["kind"] == "PendingWorkloadsSummary" and summary["items"] == []
    kcm_log = cluster.directory / "logs" / "kube-controller-manager.log"
    offset = kcm_log.stat().st_size
    cluster.kubectl("create", "namespace", "empty")
    started = time.monotonic()
    cluster.kubectl("delete", "namespace", "empty", "--wait=true", timeout=60)
    assert time.monotonic() - started < 15, "an empty namespace took 15 s or more to delete"
    stale = [line for line in kcm_log.read_bytes()[offset:].decode(errors="replace").splitlines()
             if f"stale GroupVersion discovery: {VISIBILITY}" in line]
    assert not stale, stale[:3]
    cluster.kubectl("create", "serviceaccount", "scraper", "-n", RELEASE_NS)
    cluster.kubectl("create", "clusterrolebinding", "pykueue-scraper", "--clusterrole=pykueue-metrics-reader",
                    f"--serviceaccount={RELEASE_NS}:scraper")
    token = cluster.kubectl("create", "token", "scraper", "-n", RELEASE_NS).stdout.strip()
    service = _get(cluster, "service", "pykueue-controller-metrics-service", "-n", RELEASE_NS)
    url = f"https://{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}/metrics"
    assert https_get(url)[0] == 401
    status, text = eventually(lambda: (r := https_get(url, token=token))[0] == 200 and r, 60,
                              what="/metrics for the metrics reader (RBAC takes a moment)")
    assert any(line.startswith('kueue_admitted_workloads_total{cluster_queue="cq"') and line.endswith(" 1.0")
               for line in text.splitlines()), [line for line in text.splitlines() if "admitted" in line][:5]


def _run_version_job(cluster: DevCluster, name: str, ns: str) -> None:
    """A Job in LocalQueue `lq` whose pod runs `pykueue --version`, created once the webhooks answer,
    then waited on until Complete."""
    pod = yaml.safe_load(_pod("unused", ns, ["--version"]))["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
           "spec": {"backoffLimit": 0, "template": {"spec": pod}}}
    eventually(lambda: cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(job), check=False).returncode == 0,
               timeout=60, what="the webhooks to accept the Job")
    cluster.kubectl("wait", "--for=condition=Complete", f"job/{name}", "-n", ns, "--timeout=180s", timeout=200)


def _controller_pods(cluster: DevCluster) -> list[dict[str, Any]]:
    return [p for p in _get(cluster, "pods", "-n", RELEASE_NS)["items"] if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def _ready_since(obj: dict[str, Any]) -> str:
    return next(c["lastTransitionTime"] for c in obj["status"]["conditions"] if c["type"] == "Ready")


def test_a_restarted_pod_keeps_the_ca_and_stops_on_sigterm_within_its_grace(cluster: DevCluster) -> None:
    """After the install test: the certificate lives in its Secret, so a new pod serves the same CA
    the webhook configurations carry; the old pod ends on SIGTERM well before the kubelet's SIGKILL."""
    secret = _get(cluster, "secret", "pykueue-webhook-server-cert", "-n", RELEASE_NS)["data"]["ca.crt"]
    (old,) = _controller_pods(cluster)
    assert old["status"]["containerStatuses"][0]["restartCount"] == 0  # the liveness probe never failed
    grace = old["spec"]["terminationGracePeriodSeconds"]
    started = time.monotonic()
    cluster.kubectl("delete", "pod", old["metadata"]["name"], "-n", RELEASE_NS, "--wait=true", timeout=grace + 60)
    took = time.monotonic() - started
    assert took < min(grace, 20), f"the pod took {took:.1f} s to stop (grace {grace} s): SIGTERM not handled"
    new = eventually(lambda: [p for p in _controller_pods(cluster) if _ready(p)], what="a new Ready controller pod")
    assert new[0]["metadata"]["name"] != old["metadata"]["name"] and new[0]["spec"]["nodeName"] == node.NAME
    assert _get(cluster, "secret", "pykueue-webhook-server-cert", "-n", RELEASE_NS)["data"]["ca.crt"] == secret
    hooks = _get(cluster, "validatingwebhookconfigurations")["items"]
    bundles = {w["clientConfig"].get("caBundle") for h in hooks for w in h["webhooks"]
               if h["metadata"]["name"].startswith("pykueue")}
    assert bundles == {secret}


def test_two_replicas_one_leads_and_the_other_takes_over(cluster: DevCluster) -> None:
    env = {"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(cluster.directory)}
    result = subprocess.run([str(helm.ensure()), "upgrade", "pykueue", str(REPO / "charts" / "pykueue"),
                             "-n", RELEASE_NS, "--reuse-values", "--set", "replicaCount=2", "--wait",
                             "--timeout", "240s"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr.strip()
    pods = eventually(lambda: len(ps := [p for p in _controller_pods(cluster) if _ready(p)]) == 2 and ps,
                      what="two Ready replicas")

    def holder() -> str:
        lease = _get(cluster, "lease", "c1f6bfd2.kueue.x-k8s.io", "-n", RELEASE_NS)
        return lease["spec"].get("holderIdentity") or ""

    leader_id = eventually(holder, what="a leader")
    names = [p["metadata"]["name"] for p in pods]
    leader = next(n for n in names if leader_id.startswith(n + "_"))
    other = next(n for n in names if n != leader)
    cluster.kubectl("delete", "pod", leader, "-n", RELEASE_NS, "--wait=false")
    started = time.monotonic()
    eventually(lambda: holder().startswith(other + "_"), timeout=40, what=f"{other} to take the Lease")
    assert time.monotonic() - started < 15 + 5  # the lease duration, plus a renew period
    ns = "handover"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": ns},
         "spec": {"clusterQueue": "cq"}}))
    _run_version_job(cluster, "after", ns)
    (wl,) = _get(cluster, "workloads", "-n", ns)["items"]
    admitted = [c for c in wl["status"]["conditions"] if c["type"] == "Admitted"]
    assert len(admitted) == 1 and admitted[0]["status"] == "True"
    assert _get(cluster, "job", "after", "-n", ns)["status"].get("succeeded") == 1


def test_the_release_manifest_installs_the_same_controller(cluster: DevCluster) -> None:
    """`kubectl apply --server-side -f config/manifests.yaml`, the other way Kueue is installed, after
    the helm release is gone: the controller pod Ready on the real node, its webhooks serving."""
    env = {"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(cluster.directory)}
    subprocess.run([str(helm.ensure()), "uninstall", "pykueue", "-n", RELEASE_NS, "--wait"], check=True,
                   capture_output=True, env=env, timeout=120)
    cluster.kubectl("delete", "namespace", RELEASE_NS, "--wait=true", timeout=120)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "config" / "manifests.yaml"))
    cluster.kubectl("rollout", "status", "deployment/pykueue-controller", "-n", RELEASE_NS, "--timeout=180s",
                    timeout=200)
    (pod,) = _controller_pods(cluster)
    assert _ready(pod) and pod["spec"]["nodeName"] == node.NAME
    ns = "manifest"
    cluster.kubectl("create", "namespace", ns)
    pod_spec = yaml.safe_load(_pod("unused", ns, ["--version"]))["spec"]
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "held", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "none"}},
           "spec": {"backoffLimit": 0, "template": {"spec": pod_spec}}}
    eventually(lambda: cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(job), check=False).returncode == 0,
               timeout=60, what="the webhooks to accept the Job")
    assert _get(cluster, "job", "held", "-n", ns)["spec"]["suspend"] is True  # the mutating webhook's doing


def test_kwoks_nodes_and_pods_stay_ready_past_the_node_grace_period(cluster: DevCluster) -> None:
    """From the lease test on, for five minutes: kube-controller-manager (node-monitor-grace-period 50 s)
    sees the Leases, so the fake nodes never go Unknown and kwok's pod stays Ready all along (its Ready
    condition keeps the time it became True: it never flipped). Watched every few seconds, not slept."""
    assert LONG_POD_READY, "test_fake_nodes_hold_a_lease_that_kwok_renews must run first"
    while True:
        waited = time.monotonic() - LONG_POD_READY[0]
        pod = _get(cluster, "pod", "long", "-n", "default")
        assert _ready(pod), (f"Ready lost after {waited:.0f} s", pod["status"])
        assert _ready_since(pod) == LONG_POD_READY[1], f"Ready flipped within {waited:.0f} s"
        for n in _get(cluster, "nodes")["items"]:
            ready = next(c for c in n["status"]["conditions"] if c["type"] == "Ready")
            assert ready["status"] == "True", (n["metadata"]["name"], ready, f"after {waited:.0f} s")
        if waited >= 300:
            break
        time.sleep(5)
    print(f"kwok's pod Ready for {waited:.0f} s")


def test_down_leaves_no_container_mount_or_bridge(cluster: DevCluster) -> None:
    """Last in the module: stopping the cluster undoes the node (the fixture's own stop then finds
    nothing). Its containers, containerd's shims, the mounts under DIR/node (pod volumes, snapshots,
    network namespaces), the bridge and kube-proxy's chains are all gone."""
    directory = cluster.directory / "node"
    assert node._mounts_under(directory), "the node's pods should have left mounts while it runs"
    address = str(directory / "containerd" / "containerd.sock").encode()
    stopped = cluster.stop()
    assert {"kubelet", "containerd", "kube-proxy"} <= set(stopped)
    node.wait_gone(directory)
    assert node._mounts_under(directory) == []
    assert not directory.exists()
    assert not Path(f"/sys/class/net/{node.BRIDGE}").exists()
    shims = [pid for pid in node._pids() if address in _cmdline(pid)]
    assert shims == []
    nat = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    assert "KUBE-SERVICES" not in nat


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
