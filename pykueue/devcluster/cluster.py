"""Start and stop a real Kubernetes control plane on loopback ports, for tests and for people.

Tier 1 is etcd and kube-apiserver (RBAC and admission webhooks on): what upstream Kueue's integration
tests run on. Tier 2 adds kube-controller-manager (Job, garbage-collector, namespace and
service-account controllers among its defaults), kube-scheduler, and kwok, which fakes the kubelets of
the nodes the caller declares and moves their pods Pending -> Running -> Succeeded. Tier 2 takes
addons: ``ray`` installs KubeRay's CRDs and runs its operator (``pykueue.devcluster.kuberay``) as one
more process against the cluster, so RayClusters and RayJobs get real head and worker Pods; ``jobset``
and ``lws`` build JobSet's and LeaderWorkerSet's managers from their source archives
(``pykueue.devcluster.archived``) and run them with their webhooks served on loopback
(``pykueue.devcluster.addon_setup``).

Every process is recorded in `DIR/cluster.json` as it starts, so `stop()` (or `pykueue dev-cluster
down` from another process) ends exactly what was started, even after a failed start.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import addon_setup, archived, binaries, image, kuberay, node, pki
from pykueue.devcluster.rest import Rest

STAGES = Path(__file__).with_name("kwok-stages.yaml")
STATE_FILE = "cluster.json"
FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Tier 3: kwok's nodes are tainted so that an ordinary pod (the chart's) lands on the real node; a pod
# meant for a fake node tolerates it.
FAKE_NODE_TAINT = {"key": FAKE_NODE_ANNOTATION[0], "value": FAKE_NODE_ANNOTATION[1], "effect": "NoSchedule"}
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}
ADDONS = ("ray", *archived.BY_ADDON)
# Reverse start order: the processes that depend on the API server go first.
STOP_ORDER = (*(a.binary for a in archived.BY_ADDON.values()), "ray-operator", "kubelet", "kube-proxy", "containerd", "kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")


def stages_for(pod_run_time: float) -> str:
    """The packaged kwok stages with ``pod_run_time`` seconds as the default delay of ``pod-complete``:
    a Job's pod then runs that long before it Succeeds. kwok reads the delay from the pod's annotation
    ``pod-complete.stage.kwok.x-k8s.io/delay`` first and falls back to this default, so a pod can
    still ask for its own run time."""
    if pod_run_time < 0:
        raise ClusterError(f"the pods' run time cannot be negative ({pod_run_time:g}s)")
    stages = [doc for doc in yaml.safe_load_all(STAGES.read_text()) if doc]
    complete = next(doc for doc in stages if doc["metadata"]["name"] == "pod-complete")
    complete["spec"]["delay"]["durationMilliseconds"] = round(pod_run_time * 1000)
    header = (f"# pykueue's kwok stages ({STAGES.name}), with the pods of Jobs running "
              f"{pod_run_time:g}s unless their\n# annotation pod-complete.stage.kwok.x-k8s.io/delay says otherwise\n")
    return header + yaml.safe_dump_all(stages, sort_keys=False, width=1000)


class ClusterError(RuntimeError):
    """The cluster did not come up (or down); the message names the process and its log."""


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def default_nodes(count: int = 2) -> list[dict[str, Any]]:
    """A few plain nodes, for callers that do not care about labels or taints."""
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"kwok-node-{i}"}} for i in range(count)]


def fake_node(node: dict[str, Any], *, tainted: bool = False) -> dict[str, Any]:
    """A Node manifest as kwok manages it: its annotation, a hostname label, and a capacity
    (the caller's, else a roomy default) that the scheduler can fit pods into; ``tainted`` (tier 3)
    adds FAKE_NODE_TAINT, so that only pods that tolerate it land there."""
    node = json.loads(json.dumps(node))
    if tainted:
        taints = node.setdefault("spec", {}).setdefault("taints", [])
        if FAKE_NODE_TAINT not in taints:
            taints.append(dict(FAKE_NODE_TAINT))
    meta = node.setdefault("metadata", {})
    meta.setdefault("annotations", {})[FAKE_NODE_ANNOTATION[0]] = FAKE_NODE_ANNOTATION[1]
    meta.setdefault("labels", {}).setdefault("kubernetes.io/hostname", meta.get("name", ""))
    status = node.setdefault("status", {})
    capacity = status.setdefault("capacity", dict(DEFAULT_CAPACITY))
    status.setdefault("allocatable", dict(capacity))
    return node


def load_nodes(path: Path) -> list[dict[str, Any]]:
    """Node manifests from a YAML file (several documents, or a v1 List)."""
    nodes: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        items = doc.get("items", []) if doc.get("kind") == "List" else [doc]
        for item in items:
            if item.get("kind") != "Node" or not item.get("metadata", {}).get("name"):
                raise ClusterError(f"{path}: every document must be a Node with metadata.name")
            nodes.append(item)
    return nodes


def _kubeconfig(path: Path, server: str, ca: Path, client: pki.Pair, user: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "pykueue-dev", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}],
        "contexts": [{"name": "pykueue-dev", "context": {"cluster": "pykueue-dev", "user": user}}],
        "current-context": "pykueue-dev",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a process, to tell it from a later one that reuses its pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie has exited already


@functools.cache
def _lasting_thread() -> concurrent.futures.ThreadPoolExecutor:
    """One worker thread that stays until the process ends, for starting children from other threads."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="devcluster-spawn")


def die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the test process that started it dies."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Process:
    """One started binary, as recorded in the state file."""

    name: str
    pid: int
    started: str | None
    log: str

    def alive(self) -> bool:
        return self.started is not None and _start_time(self.pid) == self.started


@dataclass
class DevCluster:
    """A control plane in `directory`: its certificates, kubeconfigs, logs and state file."""

    directory: Path
    tier: int = 1
    bin_dir: Path | None = None
    processes: list[Process] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    etcd_data: str | None = None
    apiserver_flags: tuple[str, ...] = ()  # appended last, so they override (benchmarks: profiling)
    pod_run_time: float = 0.0  # tier 2: seconds a Job's pod runs before kwok completes it (see stages_for)
    addons: tuple[str, ...] = ()  # tier 2: extra operators started with the cluster (ADDONS)
    images: tuple[Path, ...] = ()  # tier 3: OCI archives loaded into the node's containerd
    _children: list[subprocess.Popen] = field(default_factory=list)
    _rest: Rest | None = field(default=None, repr=False)

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['kube-apiserver']}"

    @property
    def rest(self) -> Rest:
        """In-process reads as the admin (``rest.Rest``): what the tests' polls use instead of a kubectl
        process per read."""
        if self._rest is None:
            self._rest = Rest(self)
        return self._rest

    @property
    def kubectl_path(self) -> Path:
        assert self.bin_dir is not None
        return self.bin_dir / "kubectl"

    # ---- start ---------------------------------------------------------------------------------

    def start(self, nodes: list[dict[str, Any]] | None = None, *, detach: bool = False,
              timeout: float = 90.0) -> DevCluster:
        """Build missing binaries, then start the tier's processes and wait until each is ready.

        `detach` leaves the processes running after this Python process exits (the CLI's `up`);
        otherwise they are killed with it, so a crashed test run leaves nothing behind.
        """
        if self.tier not in (1, 2, 3):
            raise ClusterError(f"tier must be 1, 2 or 3, not {self.tier}")
        check_addons(self.addons, self.tier)
        if self.tier == 3:
            try:
                node.check_machine()
            except node.NodeError as exc:
                raise ClusterError(str(exc)) from None
        self.bin_dir = self.bin_dir or binaries.ensure(node=self.tier == 3)
        if "ray" in self.addons:
            kuberay.ensure()  # built before anything starts: a failed build leaves nothing running
        for addon in self.addons:
            if addon in archived.BY_ADDON:
                archived.ensure(archived.BY_ADDON[addon])  # the same
        if self.tier == 3:  # built before anything starts, too
            try:
                self.images = (image.pause_archive(), image.ensure())
            except image.ImageError as exc:
                raise ClusterError(str(exc)) from None
        self.directory.mkdir(parents=True, exist_ok=True)
        existing = self.directory / STATE_FILE
        if existing.exists() and any(p.alive() for p in DevCluster.load(self.directory).processes):
            raise ClusterError(f"a cluster is already running in {self.directory}; stop it first")
        (self.directory / "logs").mkdir(exist_ok=True)
        deadline = time.monotonic() + timeout
        try:
            certs = pki.make_cluster_pki(self.directory / "pki")
            self._start_etcd(detach, deadline)
            self._start_apiserver(certs, detach, deadline)
            if self.tier >= 2:
                self._start_tier2(certs, nodes if nodes is not None else default_nodes(), detach, deadline)
            if self.tier == 3:
                self._start_node(certs, detach, deadline)
            if "ray" in self.addons:
                self.start_ray(detach=detach, timeout=max(1.0, deadline - time.monotonic()))
            for addon in self.addons:
                if addon in archived.BY_ADDON:
                    self.start_archived(addon, detach=detach, timeout=max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, args: list[str], detach: bool, binary: Path | None = None) -> Process:
        assert self.bin_dir is not None
        log = self.directory / "logs" / f"{name}.log"
        with open(log, "ab") as out:
            child = subprocess.Popen(
                [str(binary or self.bin_dir / name), *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=self.directory,
                start_new_session=True, preexec_fn=None if detach else die_with_parent,
            )
        self._children.append(child)
        proc = Process(name, child.pid, _start_time(child.pid), str(log))
        self.processes.append(proc)
        self.save()
        return proc

    def _wait(self, proc: Process, ready, deadline: float) -> None:
        """Poll `ready()` until it holds; fail early, with the log's tail, if the process died."""
        while time.monotonic() < deadline:
            if not proc.alive():
                raise ClusterError(f"{proc.name} exited during start-up; last log lines:\n{_tail(proc.log)}")
            with contextlib.suppress(OSError, urllib.error.URLError, ssl.SSLError, ValueError):
                if ready():
                    return
            time.sleep(0.1)
        raise ClusterError(f"{proc.name} was not ready in time; last log lines:\n{_tail(proc.log)}")

    def _start_etcd(self, detach: bool, deadline: float) -> None:
        client, peer = free_port(), free_port()
        self.ports.update(etcd=client, etcd_peer=peer)
        shm = Path("/dev/shm")
        base = shm if shm.is_dir() and os.access(shm, os.W_OK) else self.directory
        self.etcd_data = tempfile.mkdtemp(prefix="pykueue-etcd-", dir=base)
        proc = self._spawn("etcd", [
            f"--data-dir={self.etcd_data}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ], detach)
        self._wait(proc, lambda: b'"health":"true"' in _get(f"http://127.0.0.1:{client}/health"), deadline)

    def _start_apiserver(self, certs: pki.ClusterPKI, detach: bool, deadline: float) -> None:
        port = free_port()
        self.ports["kube-apiserver"] = port
        args = [
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={certs.serving.cert}",
            f"--tls-private-key-file={certs.serving.key}",
            f"--client-ca-file={certs.ca.cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={certs.service_account_pub}",
            f"--service-account-signing-key-file={certs.service_account_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
            f"--requestheader-client-ca-file={certs.front_proxy_ca.cert}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={certs.front_proxy_client.cert}",
            f"--proxy-client-key-file={certs.front_proxy_client.key}",
            "--profiling=false",
        ]
        if self.tier == 1:
            # No controller manager creates the `default` ServiceAccounts; envtest drops the plugin too.
            args.append("--disable-admission-plugins=ServiceAccount")
        if self.tier == 3:
            # Pods reach it through the `kubernetes` Service (kube-proxy, to this machine's address);
            # the Node authorizer serves the kubelet; webhooks and aggregated APIs are called at their
            # pods' addresses, as the aggregator-routing flag says.
            args = [a for a in args if not a.startswith(("--bind-address", "--advertise-address",
                                                         "--endpoint-reconciler-type", "--authorization-mode"))]
            args += ["--bind-address=0.0.0.0", f"--advertise-address={node.host_ip()}",
                     "--endpoint-reconciler-type=lease", "--authorization-mode=Node,RBAC",
                     "--enable-aggregator-routing=true",
                     f"--kubelet-client-certificate={certs.admin.cert}", f"--kubelet-client-key={certs.admin.key}",
                     "--kubelet-preferred-address-types=InternalIP,Hostname"]
        args += self.apiserver_flags
        proc = self._spawn("kube-apiserver", args, detach)
        _kubeconfig(self.kubeconfig, self.server, certs.ca.cert, certs.admin, "pykueue-admin")
        context = self.ssl_context(certs)
        self._wait(proc, lambda: _get(f"{self.server}/readyz", context) == b"ok", deadline)

    def _start_tier2(self, certs: pki.ClusterPKI, nodes: list[dict[str, Any]], detach: bool,
                     deadline: float) -> None:
        kcm_conf = self.directory / "controller-manager.kubeconfig"
        _kubeconfig(kcm_conf, self.server, certs.ca.cert, certs.controller_manager, "kube-controller-manager")
        sched_conf = self.directory / "scheduler.kubeconfig"
        _kubeconfig(sched_conf, self.server, certs.ca.cert, certs.scheduler, "kube-scheduler")
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # their self-made serving certificates; /healthz is public

        kcm_port = self.ports["kube-controller-manager"] = free_port()
        kcm = self._spawn("kube-controller-manager", [
            f"--kubeconfig={kcm_conf}",
            f"--authentication-kubeconfig={kcm_conf}",
            f"--authorization-kubeconfig={kcm_conf}",
            "--bind-address=127.0.0.1",
            f"--secure-port={kcm_port}",
            f"--cert-dir={self.directory / 'kcm-certs'}",
            "--leader-elect=false",
            f"--service-account-private-key-file={certs.service_account_key}",
            f"--root-ca-file={certs.ca.cert}",
            f"--cluster-signing-cert-file={certs.ca.cert}",
            f"--cluster-signing-key-file={certs.ca.key}",
            "--use-service-account-credentials=true",  # each controller under its own RBAC role
            "--concurrent-job-syncs=10",
            "--profiling=false",
        ], detach)
        sched_port = self.ports["kube-scheduler"] = free_port()
        sched = self._spawn("kube-scheduler", [
            f"--kubeconfig={sched_conf}",
            f"--authentication-kubeconfig={sched_conf}",
            f"--authorization-kubeconfig={sched_conf}",
            "--bind-address=127.0.0.1",
            f"--secure-port={sched_port}",
            f"--cert-dir={self.directory / 'scheduler-certs'}",
            "--leader-elect=false",
            "--profiling=false",
        ], detach)
        kwok_port = self.ports["kwok"] = free_port()
        kwok = self._spawn("kwok", [
            f"--kubeconfig={self.kubeconfig}",
            f"--config={self._stages_file()}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=" + "=".join(FAKE_NODE_ANNOTATION),
            "--cidr=10.244.0.1/16",
            # A node Lease per fake node, renewed by kwok: without it kube-controller-manager saw no
            # heartbeat for the stages' 10-20 min and marked every node Unknown (and its pods not Ready)
            # after its 50 s grace period.
            "--node-lease-duration-seconds=40",
            "--node-ip=10.0.0.2",
            f"--server-address=127.0.0.1:{kwok_port}",
        ], detach)
        self._wait(kcm, lambda: _get(f"https://127.0.0.1:{kcm_port}/healthz", insecure) == b"ok", deadline)
        self._wait(sched, lambda: _get(f"https://127.0.0.1:{sched_port}/healthz", insecure) == b"ok", deadline)
        self._wait(kwok, lambda: _get(f"http://127.0.0.1:{kwok_port}/healthz") == b"ok", deadline)
        if nodes:
            self.add_nodes(nodes, timeout=max(1.0, deadline - time.monotonic()))
        # Pods need their namespace's `default` ServiceAccount, which the controller manager makes.
        self._wait(kcm, lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
                   deadline)

    def _start_node(self, certs: pki.ClusterPKI, detach: bool, deadline: float) -> None:
        """Tier 3: containerd (with the sandbox and project images loaded), kube-proxy and a kubelet
        registering the node ``node.NAME``; returns once that node is Ready."""
        assert self.bin_dir is not None
        real = node.Node(self.directory / "node")
        config = real.containerd_config()
        containerd = self._spawn("containerd", ["--config", str(config)], detach,
                                 binary=Path(shutil.which("containerd") or "containerd"))
        self._wait(containerd, lambda: real.socket.is_socket(), deadline)
        try:
            for archive in self.images:
                real.import_image(archive)
        except node.NodeError as exc:
            raise ClusterError(str(exc)) from None
        kubelet_cert, proxy_cert = real.certificates(self.directory / "pki")
        kubelet_conf = self.directory / "kubelet.kubeconfig"
        _kubeconfig(kubelet_conf, self.server, certs.ca.cert, kubelet_cert, f"system:node:{node.NAME}")
        proxy_conf = self.directory / "kube-proxy.kubeconfig"
        _kubeconfig(proxy_conf, self.server, certs.ca.cert, proxy_cert, "system:kube-proxy")
        proxy_health, proxy_metrics = free_port(), free_port()
        self.ports.update({"kube-proxy": proxy_health})
        proxy = self._spawn("kube-proxy", [
            f"--kubeconfig={proxy_conf}",
            f"--hostname-override={node.NAME}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={node.POD_SUBNET}",
            f"--healthz-bind-address=127.0.0.1:{proxy_health}",
            f"--metrics-bind-address=127.0.0.1:{proxy_metrics}",
            "--conntrack-max-per-core=0",  # leave the machine's conntrack sysctls alone
        ], detach)
        kubelet_port, kubelet_health = free_port(), free_port()
        self.ports.update({"kubelet": kubelet_port, "kubelet-healthz": kubelet_health})
        kubelet = self._spawn("kubelet", [
            f"--config={real.kubelet_config(certs.ca.cert, kubelet_port, kubelet_health, node.host_ip())}",
            f"--kubeconfig={kubelet_conf}",
            f"--root-dir={real.directory / 'kubelet'}",
            f"--cert-dir={real.directory / 'kubelet-pki'}",
            f"--hostname-override={node.NAME}",
            f"--node-ip={node.host_ip()}",
        ], detach)
        self._wait(kubelet, lambda: _get(f"http://127.0.0.1:{kubelet_health}/healthz") == b"ok", deadline)
        self._wait(proxy, lambda: bool(_get(f"http://127.0.0.1:{proxy_health}/healthz")), deadline)
        self._wait(kubelet, lambda: self.kubectl("get", "node", node.NAME, check=False).returncode == 0, deadline)
        self.wait_for("Ready", f"node/{node.NAME}", timeout=max(1.0, deadline - time.monotonic()))

    def start_ray(self, *, detach: bool = False, timeout: float = 90.0) -> Process:
        """The ``ray`` addon on a running tier-2 cluster: KubeRay's CRDs installed (server-side: the
        RayJob CRD is too large for the last-applied annotation), then its operator started against
        the admin kubeconfig, without leader election, on loopback ports; ready once its probe is."""
        if self.tier < 2:
            raise ClusterError("the ray addon needs a tier 2 cluster (its operator's Pods need kwok's nodes)")
        home = kuberay.ensure()
        deadline = time.monotonic() + timeout
        crds = home / "crds"
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crds))
        self.wait_for("Established", *(f"crd/{n}" for n in kuberay.CRD_NAMES),
                      timeout=deadline - time.monotonic())
        probe, metrics = free_port(), free_port()
        self.ports.update({"ray-operator": probe, "ray-operator-metrics": metrics})
        proc = self._spawn(kuberay.BINARY, [
            f"--kubeconfig={self.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probe}",
            f"--metrics-addr=127.0.0.1:{metrics}",
            "--enable-leader-election=false",
            "--log-stdout-encoder=console",
        ], detach, binary=home / "bin" / kuberay.BINARY)
        self._wait(proc, lambda: _get(f"http://127.0.0.1:{probe}/readyz") == b"ok", deadline)
        return proc

    def start_archived(self, addon: str, *, detach: bool = False, timeout: float = 90.0) -> Process:
        """The ``jobset``, ``lws`` or ``kubeflow`` addon on a running tier-2 cluster: its CRDs installed,
        its manager started with a Configuration for loopback (the training-operator: with flags, after
        its namespace, the Secret its cert rotator fills and the machine-wide serving certificate, see
        ``addon_setup``), then its webhook configurations registered at that manager's port; ready once
        its probe is and its webhook server answers."""
        spec = archived.BY_ADDON[addon]
        if self.tier < 2:
            raise ClusterError(f"the {addon} addon needs a tier 2 cluster (its controller's Pods need kwok's nodes)")
        home = archived.ensure(spec)
        deadline = time.monotonic() + timeout
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(home / "crds"))
        self.wait_for("Established", *(f"crd/{n}" for n in spec.crd_names), timeout=deadline - time.monotonic())
        webhook, probe, metrics = free_port(), free_port(), free_port()
        self.ports.update({spec.binary: probe, f"{spec.binary}-webhook": webhook, f"{spec.binary}-metrics": metrics})
        if spec.config_api is None:  # the training-operator: flags, and its cert rotator's prerequisites
            self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(addon_setup.training_operator_bootstrap()))
            ca = addon_setup.shared_serving_certificate()
            args = addon_setup.training_operator_args(self.kubeconfig, webhook_port=webhook, probe_port=probe,
                                                      metrics_port=metrics)
        else:
            workdir = self.directory / addon
            cert_dir = workdir / "certs"
            ca = addon_setup.serving_certificate(self.directory / "pki", cert_dir)
            config = workdir / "config.yaml"
            config.write_text(yaml.safe_dump(addon_setup.manager_config(
                spec, webhook_port=webhook, cert_dir=cert_dir, probe_port=probe, metrics_port=metrics),
                sort_keys=False))
            args = [f"--kubeconfig={self.kubeconfig}", f"--config={config}"]
        proc = self._spawn(spec.binary, args, detach, binary=home / "bin" / spec.binary)
        manifests = list(yaml.safe_load_all((home / archived.WEBHOOKS_FILE).read_text()))
        configurations = addon_setup.webhook_configurations(spec, manifests, webhook, ca.read_bytes())
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(configurations, sort_keys=False))
        self._wait(proc, lambda: _get(f"http://127.0.0.1:{probe}/readyz") == b"ok", deadline)
        context = ssl.create_default_context(cafile=str(ca))
        self._wait(proc, lambda: _webhook_answers(f"https://127.0.0.1:{webhook}/", context), deadline)
        return proc

    def _stages_file(self) -> Path:
        """kwok's stages: the packaged ones, or a copy in the cluster's directory with the pods' run time."""
        if not self.pod_run_time:
            return STAGES
        path = self.directory / "kwok-stages.yaml"
        path.write_text(stages_for(self.pod_run_time))
        return path

    # ---- use -----------------------------------------------------------------------------------

    def add_nodes(self, nodes: list[dict[str, Any]], timeout: float = 60.0) -> list[str]:
        """Create Nodes that kwok fakes (tier 2) and wait until they are Ready; return their names."""
        if self.tier < 2:
            raise ClusterError("fake nodes need a tier 2 cluster (kwok runs only there)")
        manifests = [fake_node(n, tainted=self.tier == 3) for n in nodes]
        names = [m["metadata"]["name"] for m in manifests]
        self.kubectl("create", "-f", "-", input=yaml.safe_dump_all(manifests, sort_keys=False))
        self.wait_for("Ready", *(f"node/{n}" for n in names), timeout=timeout)
        return names

    def restart_apiserver(self, *, kill: bool = False, grace: float = 5.0, timeout: float = 60.0) -> None:
        """Stop kube-apiserver (SIGTERM, SIGKILL after `grace` seconds or at once with `kill`) and
        start it again with the same arguments on the same port, for tests of what its clients do
        while it is away; etcd keeps the data. Returns once it is ready again (within `timeout`)."""
        old = next((p for p in self.processes if p.name == "kube-apiserver" and p.alive()), None)
        if old is None:
            raise ClusterError("kube-apiserver is not running in this cluster")
        args = Path(f"/proc/{old.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")[1:]
        os.kill(old.pid, signal.SIGKILL if kill else signal.SIGTERM)
        limit = time.monotonic() + grace  # it waits up to a minute for open watches to end
        while old.alive() and time.monotonic() < limit:
            self._reap()
            time.sleep(0.05)
        if old.alive():
            os.kill(old.pid, signal.SIGKILL)
        while old.alive():
            self._reap()
            time.sleep(0.05)
        self.processes.remove(old)
        # The child dies with the thread that started it (PR_SET_PDEATHSIG is per thread): a caller in a
        # short-lived worker thread (asyncio.to_thread) would take the new API server down with it when
        # that thread ends, so a thread that lives as long as the process starts it.
        proc = _lasting_thread().submit(self._spawn, "kube-apiserver", [a.decode() for a in args], False).result()
        deadline = time.monotonic() + timeout
        self._wait(proc, lambda: _get(f"{self.server}/readyz", self.ssl_context()) == b"ok", deadline)

    def ssl_context(self, certs: pki.ClusterPKI | None = None) -> ssl.SSLContext:
        """A TLS context that trusts the cluster CA and presents the admin's client certificate."""
        pki_dir = self.directory / "pki"
        ca = certs.ca.cert if certs else pki_dir / "ca.crt"
        admin = certs.admin if certs else pki.Pair(pki_dir / "admin.crt", pki_dir / "admin.key")
        context = ssl.create_default_context(cafile=str(ca))
        context.load_cert_chain(str(admin.cert), str(admin.key))
        return context

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster as the admin."""
        result = subprocess.run(
            [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True, text=True, input=input, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def wait_for(self, condition: str, *objects: str, timeout: float = 60.0) -> None:
        """`kubectl wait --for=condition=...` until `timeout`, again while an object has no status yet.

        kubectl gives up at once ("accessor error: <nil>") on an object whose ``status.conditions``
        its controller has not written yet, as a just-created CRD or Node often is; that is not yet
        an answer, so the wait is repeated until the deadline, and any other failure is raised.
        """
        deadline = time.monotonic() + timeout
        while True:
            left = max(1, int(deadline - time.monotonic()))
            result = self.kubectl("wait", f"--for=condition={condition}", *objects, f"--timeout={left}s",
                                  check=False, timeout=left + 10)
            if result.returncode == 0:
                return
            if "accessor error" not in result.stderr or time.monotonic() >= deadline:
                raise ClusterError(f"kubectl wait --for=condition={condition} {' '.join(objects)} "
                                   f"failed: {result.stderr.strip()}")
            time.sleep(0.2)

    # ---- state and stop ------------------------------------------------------------------------

    def save(self) -> None:
        state = {
            "tier": self.tier,
            "binDir": str(self.bin_dir),
            "ports": self.ports,
            "etcdData": self.etcd_data,
            "addons": list(self.addons),
            "processes": [vars(p) for p in self.processes],
        }
        tmp = self.directory / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.directory / STATE_FILE)

    @classmethod
    def load(cls, directory: Path) -> DevCluster:
        """The cluster recorded in `directory`, to use or stop it from another process."""
        try:
            state = json.loads((directory / STATE_FILE).read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster was started in {directory} ({STATE_FILE} is missing)") from None
        return cls(
            directory=directory,
            tier=state["tier"],
            bin_dir=Path(state["binDir"]),
            processes=[Process(**p) for p in state["processes"]],
            ports=state["ports"],
            etcd_data=state.get("etcdData"),
            addons=tuple(state.get("addons") or ()),
        )

    def stop(self, grace: float = 5.0) -> list[str]:
        """End every recorded process (TERM, then KILL after `grace` seconds); return their names."""
        order = {name: i for i, name in enumerate(STOP_ORDER)}
        stopped = [p.name for p in sorted(self.processes, key=lambda p: order.get(p.name, -1)) if self._end(p, grace)]
        self._reap()
        if self.tier == 3:
            node.teardown(self.directory / "node", self.bin_dir / "kube-proxy" if self.bin_dir else None)
        if self.etcd_data:
            shutil.rmtree(self.etcd_data, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (self.directory / STATE_FILE).unlink()
        return stopped

    @contextlib.contextmanager
    def paused(self, name: str) -> Iterator[None]:
        """One of the cluster's processes frozen (SIGSTOP) for the block, then resumed: a controller
        that lags (kube-controller-manager still counting a suspended Job's pods active, say)."""
        procs = [p for p in self.processes if p.name == name and p.alive()]
        if not procs:
            raise ClusterError(f"no running {name} in this cluster")
        for proc in procs:
            os.kill(proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)

    def stop_ray(self, grace: float = 5.0) -> bool:
        """Stop the ray addon's operator (its CRDs and objects stay); whether one was running."""
        procs = [p for p in self.processes if p.name == kuberay.BINARY]
        ended = [self._end(p, grace) for p in procs]
        self.processes = [p for p in self.processes if p not in procs]
        self.save()
        return any(ended)

    def stop_archived(self, addon: str, grace: float = 5.0) -> bool:
        """Stop the ``jobset``, ``lws`` or ``kubeflow`` addon's manager and delete the webhook configurations that
        pointed at it (its CRDs and objects stay); whether it was running."""
        spec = archived.BY_ADDON[addon]
        procs = [p for p in self.processes if p.name == spec.binary]
        ended = [self._end(p, grace) for p in procs]
        self.processes = [p for p in self.processes if p not in procs]
        self.save()
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            self.kubectl("delete", kind, "-l", addon_setup.addon_selector(spec), "--ignore-not-found", check=False)
        return any(ended)

    def _end(self, proc: Process, grace: float) -> bool:
        """TERM, then KILL after `grace` seconds; whether it was running."""
        if not proc.alive():
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        limit = time.monotonic() + grace
        while proc.alive() and time.monotonic() < limit:
            self._reap()
            time.sleep(0.05)
        if proc.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        return True

    def _reap(self) -> None:
        for child in self._children:
            child.poll()


def check_addons(addons: tuple[str, ...] | list[str], tier: int) -> None:
    """Known addons, and only on tier 2 (their operators create Pods, which need kwok's nodes)."""
    unknown = [a for a in addons if a not in ADDONS]
    if unknown:
        raise ClusterError(f"unknown addon {', '.join(unknown)} (known: {', '.join(ADDONS)})")
    if addons and tier < 2:
        raise ClusterError(f"--addons {','.join(addons)} needs --tier 2 (the operators' Pods need kwok's nodes)")


def _get(url: str, context: ssl.SSLContext | None = None) -> bytes:
    with urllib.request.urlopen(url, context=context, timeout=2) as response:
        return response.read().strip()


def _webhook_answers(url: str, context: ssl.SSLContext) -> bool:
    """Whether a webhook server serves TLS at ``url`` (any HTTP status: the path is not a webhook's)."""
    with contextlib.suppress(urllib.error.HTTPError):
        _get(url, context)
    return True


def _tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
