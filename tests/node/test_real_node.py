"""Tier 3: a real kubelet with containerd beside kwok's nodes, the project's image on it, and the
controller installed as Kueue's users install it, with helm and then from the release manifest; its
pod runs on the real node, admits seed 001's smoke Job, whose pods run there too, and serves the
visibility API and /metrics through its Services; two replicas hand over. Each install is checked by
the same helpers (`_serves_visibility_and_metrics`, `_two_replicas_hand_over`)."""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pykueue.devcluster import helm, image, node
from pykueue.devcluster.cluster import FAKE_NODE_TAINT, DevCluster
from tests.e2e.callers import https_get
from tests.packaging.readme_blocks import seed_001_documents

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
RELEASE_NS = "pykueue-system"
NODE_GRACE = 50  # kube-controller-manager's --node-monitor-grace-period: a node with no heartbeat goes Unknown
SOAK = 3 * NODE_GRACE  # seconds the fake nodes and kwok's pod must stay Ready, counted from the lease test
LONG_POD_READY: list[Any] = []  # kwok's long-running pod: when it was seen Ready (monotonic), and since when
GPU = "nvidia.com/gpu"
OVER_QUOTA = "train-over-quota"  # seed 001's over-quota Job: pending in team-a from its test to the end


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


def _helm(cluster: DevCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(cluster.directory)}
    return subprocess.run([str(helm.ensure()), *args], capture_output=True, text=True, env=env, timeout=300)


def test_helm_install_runs_the_controller_on_the_real_node(cluster: DevCluster) -> None:
    result = _helm(cluster, "install", "pykueue", str(REPO / "charts" / "pykueue"), "-n", RELEASE_NS,
                   "--create-namespace", "--wait", "--timeout", "240s")
    pods = _get(cluster, "pods", "-n", RELEASE_NS)["items"]
    assert result.returncode == 0, (result.stderr.strip(), [p.get("status") for p in pods],
                                    cluster.kubectl("logs", "-n", RELEASE_NS, "-l", "app.kubernetes.io/name=pykueue",
                                                    "--tail=20", check=False).stdout)
    assert [p["spec"]["nodeName"] for p in pods] == [node.NAME]


def _seed_job(job: dict[str, Any], name: str, gpus: int) -> dict[str, Any]:
    """Seed 001's smoke Job with its trainer running the project's image (`pykueue --version`, a real
    container that exits 0) and asking for what the real node has: 100m CPU and 64Mi instead of the
    seed's 8 CPUs and 64Gi; ``gpus`` of the node's advertised nvidia.com/gpu (the seed's is 1)."""
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name
    (trainer,) = job["spec"]["template"]["spec"]["containers"]
    del trainer["command"]
    trainer.update(image=image.ref(), imagePullPolicy="Never", args=["--version"])
    trainer["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi", GPU: gpus}, "limits": {GPU: gpus}}
    return job


def _workload_of(cluster: DevCluster, ns: str, job: str) -> dict[str, Any] | None:
    return next((w for w in _get(cluster, "workloads", "-n", ns)["items"]
                 if any(o["name"] == job for o in w["metadata"].get("ownerReferences") or [])), None)


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def _apply_once_the_webhooks_answer(cluster: DevCluster, doc: dict[str, Any]) -> None:
    eventually(lambda: cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc), check=False).returncode == 0,
               timeout=60, what=f"the webhooks to accept {doc['kind']} {doc['metadata']['name']}")


def test_seed_001s_smoke_job_is_admitted_and_runs_on_the_real_node(cluster: DevCluster) -> None:
    """Seed 001 through the chart-installed controller, its objects as the README's install block
    applies them. The real node is what the flavor selects: it gets the H100 product label and
    advertises 8 nvidia.com/gpu (an extended resource in its status, as a device plugin would; nothing
    uses it). The seed's signals: the Workload gains QuotaReserved then Admitted=True, kueue-admission
    records an Admitted event, the Job's spec.suspend flips to false and its two trainer pods are
    scheduled, on the real node, with the flavor's node label as selector, and finish: the Job
    Complete. A Job asking for more GPUs than nominalQuota + borrowingLimit (48) stays suspended, its
    Workload not admitted (no Admitted=True), and `kubectl describe` says insufficient quota."""
    flavor, cq, lq, job = seed_001_documents()
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    ((label, product),) = flavor["spec"]["nodeLabels"].items()
    cluster.kubectl("label", "node", node.NAME, f"{label}={product}")
    cluster.kubectl("patch", "node", node.NAME, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"capacity": {GPU: "8"}, "allocatable": {GPU: "8"}}}))
    eventually(lambda: _get(cluster, "node", node.NAME)["status"]["allocatable"].get(GPU) == "8", 60,
               what="the real node to advertise 8 GPUs")
    cluster.kubectl("create", "namespace", ns)
    for doc in (flavor, cq, lq, _seed_job(job, name, 1)):
        _apply_once_the_webhooks_answer(cluster, doc)
    cluster.kubectl("wait", "--for=jsonpath={.spec.suspend}=false", f"job/{name}", "-n", ns, "--timeout=60s",
                    timeout=80)
    cluster.kubectl("wait", "--for=condition=Complete", f"job/{name}", "-n", ns, "--timeout=180s", timeout=200)
    wl = _workload_of(cluster, ns, name)
    assert wl is not None
    conditions = _conditions(wl)
    reserved, admitted = conditions["QuotaReserved"], conditions["Admitted"]
    assert reserved["status"] == admitted["status"] == "True"
    assert reserved["lastTransitionTime"] <= admitted["lastTransitionTime"]
    (assignment,) = wl["status"]["admission"]["podSetAssignments"]
    assert wl["status"]["admission"]["clusterQueue"] == cq["metadata"]["name"]
    assert assignment["flavors"] == {"cpu": "gpu-h100", "memory": "gpu-h100", GPU: "gpu-h100"}
    events = [e for e in _get(cluster, "events", "-n", ns)["items"]
              if e["involvedObject"]["kind"] == "Workload" and e["involvedObject"]["name"] == wl["metadata"]["name"]]
    assert [e["source"].get("component") for e in events if e["reason"] == "Admitted"] == ["kueue-admission"], events
    done = _get(cluster, "job", name, "-n", ns)
    assert done["status"].get("succeeded") == 2 and not done["status"].get("failed"), done["status"]
    pods = _get(cluster, "pods", "-n", ns, "-l", f"job-name={name}")["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == node.NAME
        assert pod["spec"]["nodeSelector"] == {label: product}  # injected from the flavor at admission
        assert pod["metadata"]["creationTimestamp"] >= admitted["lastTransitionTime"]  # created suspended
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        assert image.version() in cluster.kubectl("logs", pod["metadata"]["name"], "-n", ns).stdout

    _apply_once_the_webhooks_answer(cluster, _seed_job(job, OVER_QUOTA, 32 + 16 + 1))
    over = eventually(lambda: (w := _workload_of(cluster, ns, OVER_QUOTA))
                      and _conditions(w).get("QuotaReserved", {}).get("status") == "False" and w, 60,
                      what="the over-quota Workload's QuotaReserved=False")
    assert "insufficient quota for nvidia.com/gpu in flavor gpu-h100" in _conditions(over)["QuotaReserved"]["message"]
    assert _conditions(over).get("Admitted", {}).get("status") != "True"  # Admitted=False, NoReservation
    assert _get(cluster, "job", OVER_QUOTA, "-n", ns)["spec"]["suspend"] is True
    described = cluster.kubectl("describe", "workload", over["metadata"]["name"], "-n", ns).stdout
    assert "insufficient quota" in described


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


def _metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` whose labels include ``labels`` (one at most), else None."""
    values = [sample.value for family in text_string_to_metric_families(text) for sample in family.samples
              if sample.name == name and labels.items() <= sample.labels.items()]
    assert len(values) <= 1, (name, labels, values)
    return values[0] if values else None


def _serves_visibility_and_metrics(cluster: DevCluster, series: list[tuple[str, dict[str, str], float]]) -> None:
    """What an installed controller serves through its Services, checked as a user meets it: the
    aggregator reads the visibility API (fresh aggregated discovery, the merged OpenAPI), so
    kube-controller-manager sees no stale group and an empty namespace deletes in seconds; seed 001's
    over-quota Workload is team-a's one pending workload through the API server; /metrics answers over
    HTTPS through its Service to a token bound to the metrics-reader role (401 without one), the leader's
    ``series`` (name, labels, value) among them."""
    eventually(lambda: _visibility_discovered(cluster), 120, what="the visibility group, fresh, in /apis")
    status, body = _as_admin(cluster, "/openapi/v2")
    assert status == 200 and f"/apis/{VISIBILITY}/v1beta2/clusterqueues/{{name}}/pendingworkloads" in body
    over = _workload_of(cluster, "team-a", OVER_QUOTA)
    assert over is not None

    def pending() -> dict[str, Any] | None:
        answer = cluster.kubectl("get", "--raw", f"/apis/{VISIBILITY}/v1beta2/clusterqueues/team-a/pendingworkloads",
                                 check=False)
        found = json.loads(answer.stdout) if answer.returncode == 0 else {}
        return found if found.get("items") else None

    summary = eventually(pending, 60, what="team-a's pending workloads (a fresh controller lists them once synced)")
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert [i["metadata"]["name"] for i in summary["items"]] == [over["metadata"]["name"]]
    kcm_log = cluster.directory / "logs" / "kube-controller-manager.log"
    offset = kcm_log.stat().st_size
    cluster.kubectl("create", "namespace", "empty")
    started = time.monotonic()
    cluster.kubectl("delete", "namespace", "empty", "--wait=true", timeout=60)
    assert time.monotonic() - started < 15, "an empty namespace took 15 s or more to delete"
    stale = [line for line in kcm_log.read_bytes()[offset:].decode(errors="replace").splitlines()
             if f"stale GroupVersion discovery: {VISIBILITY}" in line]
    assert not stale, stale[:3]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([  # again after the namespace was re-created
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "scraper", "namespace": RELEASE_NS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "pykueue-scraper"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pykueue-metrics-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": RELEASE_NS}]}]))
    token = cluster.kubectl("create", "token", "scraper", "-n", RELEASE_NS).stdout.strip()
    service = _get(cluster, "service", "pykueue-controller-metrics-service", "-n", RELEASE_NS)
    url = f"https://{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}/metrics"
    assert https_get(url)[0] == 401
    eventually(lambda: https_get(url, token=token)[0] == 200, 60,
               what="/metrics for the metrics reader (RBAC takes a moment)")

    def found() -> list[tuple[str, dict[str, str], float | None]]:
        status, text = https_get(url, token=token)
        assert status == 200, text
        return [(name, labels, _metric(text, name, replica_role="leader", **labels)) for name, labels, _ in series]

    try:
        eventually(lambda: found() == series, 60, what="the leader's series")
    except AssertionError:
        assert found() == series  # shows what differs


# The over-quota Workload of seed 001, as every controller that reads team-a counts it.
PENDING_OVER_QUOTA = ("kueue_pending_workloads", {"cluster_queue": "team-a", "status": "inadmissible"}, 1.0)


def test_the_installed_controller_serves_visibility_and_metrics_through_its_services(cluster: DevCluster) -> None:
    """After the seed test: the helm-installed controller, which admitted seed 001's smoke Job."""
    _serves_visibility_and_metrics(cluster, [
        PENDING_OVER_QUOTA, ("kueue_admitted_workloads_total", {"cluster_queue": "team-a"}, 1.0)])


def _run_version_job(cluster: DevCluster, name: str, ns: str) -> None:
    """A Job in LocalQueue `lq` whose pod runs `pykueue --version`, created once the webhooks answer,
    then waited on until Complete."""
    pod = yaml.safe_load(_pod("unused", ns, ["--version"]))["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    _apply_once_the_webhooks_answer(cluster, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"backoffLimit": 0, "template": {"spec": pod}}})
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


def _two_replicas_hand_over(cluster: DevCluster, scale_to_two: Callable[[], None], ns: str) -> None:
    """Two replicas: one holds the Lease, the other waits; deleting the leader's pod hands the Lease to
    another replica within the lease duration (the standby, or the pod the ReplicaSet makes in the
    deleted one's place: once the Lease is free both try, so either may win), which then admits a Job
    in team-a, once."""
    scale_to_two()
    pods = eventually(lambda: len(ps := [p for p in _controller_pods(cluster) if _ready(p)]) == 2 and ps,
                      what="two Ready replicas")

    def holder() -> str:
        lease = _get(cluster, "lease", "c1f6bfd2.kueue.x-k8s.io", "-n", RELEASE_NS)
        return lease["spec"].get("holderIdentity") or ""

    leader_id = eventually(holder, what="a leader")
    names = [p["metadata"]["name"] for p in pods]
    leader = next(n for n in names if leader_id.startswith(n + "_"))
    cluster.kubectl("delete", "pod", leader, "-n", RELEASE_NS, "--wait=false")
    started = time.monotonic()
    eventually(lambda: (h := holder()) != "" and not h.startswith(leader + "_"), timeout=40,
               what=f"a replica other than {leader} to take the Lease")
    assert time.monotonic() - started < 15 + 5  # the lease duration, plus a renew period
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": ns},
         "spec": {"clusterQueue": "team-a"}}))
    _run_version_job(cluster, "after", ns)
    (wl,) = _get(cluster, "workloads", "-n", ns)["items"]
    admitted = [c for c in wl["status"]["conditions"] if c["type"] == "Admitted"]
    assert len(admitted) == 1 and admitted[0]["status"] == "True"
    assert _get(cluster, "job", "after", "-n", ns)["status"].get("succeeded") == 1


def test_two_replicas_one_leads_and_the_other_takes_over(cluster: DevCluster) -> None:
    def upgrade() -> None:
        result = _helm(cluster, "upgrade", "pykueue", str(REPO / "charts" / "pykueue"), "-n", RELEASE_NS,
                       "--reuse-values", "--set", "replicaCount=2", "--wait", "--timeout", "240s")
        assert result.returncode == 0, result.stderr.strip()

    _two_replicas_hand_over(cluster, upgrade, "handover")


def test_the_release_manifest_installs_the_same_controller(cluster: DevCluster) -> None:
    """`kubectl apply --server-side -f config/manifests.yaml`, the other way Kueue is installed, after
    the helm release is gone (its CRDs, and so seed 001's objects, stay): the controller pod Ready on
    the real node, its webhooks serving."""
    result = _helm(cluster, "uninstall", "pykueue", "-n", RELEASE_NS, "--wait")
    assert result.returncode == 0, result.stderr.strip()
    cluster.kubectl("delete", "namespace", RELEASE_NS, "--wait=true", timeout=120)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "config" / "manifests.yaml"))
    cluster.kubectl("rollout", "status", "deployment/pykueue-controller", "-n", RELEASE_NS, "--timeout=180s",
                    timeout=200)
    (pod,) = _controller_pods(cluster)
    assert _ready(pod) and pod["spec"]["nodeName"] == node.NAME
    ns = "manifest"
    cluster.kubectl("create", "namespace", ns)
    pod_spec = yaml.safe_load(_pod("unused", ns, ["--version"]))["spec"]
    _apply_once_the_webhooks_answer(cluster, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "held", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "none"}},
        "spec": {"backoffLimit": 0, "template": {"spec": pod_spec}}})
    assert _get(cluster, "job", "held", "-n", ns)["spec"]["suspend"] is True  # the mutating webhook's doing


def test_the_manifest_installed_controller_serves_visibility_and_metrics(cluster: DevCluster) -> None:
    """As the helm-installed one: its own Services, the aggregator, /metrics for a metrics reader. It
    admitted nothing yet; seed 001's over-quota Workload is pending in team-a as before."""
    _serves_visibility_and_metrics(cluster, [PENDING_OVER_QUOTA])


def test_the_manifest_installed_controller_hands_over_between_two_replicas(cluster: DevCluster) -> None:
    def scale() -> None:
        cluster.kubectl("scale", "deployment/pykueue-controller", "-n", RELEASE_NS, "--replicas=2")

    _two_replicas_hand_over(cluster, scale, "handover-manifest")


def test_kwoks_nodes_and_pods_stay_ready_past_the_node_grace_period(cluster: DevCluster) -> None:
    """From the lease test on, for three grace periods: kube-controller-manager (node-monitor-grace-period 50 s)
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
        if waited >= SOAK:
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
