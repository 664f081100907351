"""Tier 3's real node: containerd, a kubelet and kube-proxy on this machine, beside kwok's fake nodes.

containerd, runc and the CNI plugins are Debian's (`apt-get install containerd runc
containernetworking-plugins iptables catatonit`); the kubelet and kube-proxy are built from the same
pinned Kubernetes module as the control plane (``binaries.ensure(node=True)``). Everything the node
keeps lives under ``DIR/node`` (containerd's root and state, runc's state, network namespaces, the
kubelet's pod volumes, CNI's address leases), so ``teardown`` finds all of it: containers killed,
mounts undone, the bridge and kube-proxy's rules removed.

Two settings are what this machine needs (see docs/testing.md): containerd's CRI restricts
oom_score_adj (no process here may lower it below 0; without it every sandbox fails in runc's
nsexec), and the cgroupfs driver (cgroup v1, no systemd).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.devcluster import image, pki

NAME = "pykueue-node"
BRIDGE = "pykueue0"
POD_SUBNET = "10.244.100.0/24"
PACKAGES = {"containerd": "containerd", "runc": "runc", "/usr/lib/cni/bridge": "containernetworking-plugins",
            "iptables": "iptables", "/usr/bin/catatonit": "catatonit"}


class NodeError(RuntimeError):
    """The real node cannot run here; the message says what is missing or what failed."""


def host_ip() -> str:
    """The address of this machine's default route: the API server's advertised address, which
    kube-proxy sends the pods' ``kubernetes`` Service traffic to."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.254", 9))  # no packet is sent: the kernel only picks the route
        except OSError as exc:
            raise NodeError(f"tier 3 needs an IPv4 address with a route (for the pods to reach the API server): {exc}") from None
        return sock.getsockname()[0]


def check_machine() -> None:
    """What tier 3 needs from the machine, each failure one line naming what to install or why."""
    if os.geteuid() != 0:
        raise NodeError("tier 3 runs a kubelet and containerd, which need root")
    missing = sorted({pkg for what, pkg in PACKAGES.items()
                      if not (Path(what).exists() if what.startswith("/") else shutil.which(what))})
    if missing:
        raise NodeError(f"tier 3 needs Debian's {' '.join(missing)} (apt-get install {' '.join(missing)})")
    if "overlay" not in Path("/proc/filesystems").read_text():
        raise NodeError("tier 3 needs overlayfs (containerd's snapshotter): not in /proc/filesystems")
    if not Path("/sys/fs/cgroup/memory").is_dir() and not Path("/sys/fs/cgroup/cgroup.controllers").exists():
        raise NodeError("tier 3 needs cgroups mounted at /sys/fs/cgroup (v1 with a memory hierarchy, or v2)")


@dataclass
class Node:
    """The node's files, under ``directory`` (the cluster's ``DIR/node``)."""

    directory: Path

    @property
    def socket(self) -> Path:
        return self.directory / "containerd" / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.directory / "runc"

    def containerd_config(self) -> Path:
        d = self.directory / "containerd"
        cni = self.directory / "cni"
        for sub in (d, cni / "conf", cni / "ipam"):
            sub.mkdir(parents=True, exist_ok=True)
        (cni / "conf" / "10-pykueue.conflist").write_text(json.dumps({
            "cniVersion": "0.4.0", "name": "pykueue",
            "plugins": [{
                "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": str(cni / "ipam"),
                         "ranges": [[{"subnet": POD_SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}]},
            }],
        }))
        config = d / "config.toml"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        config.write_text(f"""version = 2
root = "{d / 'root'}"
state = "{d / 'state'}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[{cri}]
  sandbox_image = "{image.PAUSE_REF}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{self.runc_root}"
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni / 'conf'}"
""")
        return config

    def certificates(self, pki_dir: Path) -> tuple[pki.Pair, pki.Pair]:
        """Client certificates for the kubelet (``system:node:NAME`` in ``system:nodes``, which the
        Node authorizer serves) and kube-proxy (``system:kube-proxy``, bound to system:node-proxier)."""
        ca_cert = x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes())
        ca_key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), None)
        kubelet = pki.make_leaf(pki_dir, "kubelet", ca_cert, ca_key, f"system:node:{NAME}",  # type: ignore[arg-type]
                                org="system:nodes", client=True)
        proxy = pki.make_leaf(pki_dir, "kube-proxy", ca_cert, ca_key, "system:kube-proxy", client=True)  # type: ignore[arg-type]
        return kubelet, proxy

    def kubelet_config(self, ca: Path, port: int, healthz: int, address: str) -> Path:
        path = self.directory / "kubelet.yaml"
        path.write_text(json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": str(ca)}},
            "authorization": {"mode": "Webhook"},
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "failSwapOn": False,
            "address": address,  # the API server's `kubectl logs` and `exec` come here
            "port": port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": healthz,
            "clusterDomain": "cluster.local",
            "resolvConf": "/etc/resolv.conf",
            # Shared disks and memory: never evict or garbage-collect the only images there are.
            "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            "registerWithTaints": [],
        }, indent=1))
        return path

    def import_image(self, archive: Path) -> None:
        """Load an OCI archive into the node's containerd, where the kubelet finds it (namespace k8s.io)."""
        result = subprocess.run(["ctr", "--address", str(self.socket), "-n", "k8s.io", "images", "import", str(archive)],
                                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise NodeError(f"ctr images import {archive} failed: {result.stderr.strip()[-300:]}")


def teardown(directory: Path, kube_proxy: Path | None) -> None:
    """Undo what the node left: its containers (runc), containerd's shims, kube-proxy's rules, every
    mount under ``directory`` (pod volumes, snapshots, network namespaces), the bridge, the files.
    Safe to call when nothing is left."""
    node = Node(directory)
    if node.runc_root.is_dir():
        listed = subprocess.run(["runc", "--root", str(node.runc_root), "list", "-q"], capture_output=True,
                                text=True, timeout=30, stdin=subprocess.DEVNULL)
        for cid in listed.stdout.split():
            subprocess.run(["runc", "--root", str(node.runc_root), "delete", "--force", cid],
                           capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    address = str(node.socket).encode()
    for pid in _pids():
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"containerd-shim" in cmdline[0] and address in cmdline:  # this node's shims only
                os.kill(pid, signal.SIGKILL)
    _end_pod_cgroups()
    if kube_proxy is not None and kube_proxy.exists():
        subprocess.run([str(kube_proxy), "--cleanup"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    _remove_kube_chains()
    for _ in range(3):  # a mount can hold another; lazily unmount, deepest first, until none is left
        mounts = _mounts_under(directory)
        if not mounts:
            break
        for mount in mounts:
            subprocess.run(["umount", "-l", mount], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    shutil.rmtree(directory, ignore_errors=True)


def _end_pod_cgroups() -> None:
    """Kill what is left in the kubelet's pod cgroups (``kubepods`` in every v1 hierarchy, or v2's)
    and remove them: a container whose runc state went first would otherwise outlive its node."""
    roots = [d / "kubepods" for d in Path("/sys/fs/cgroup").iterdir() if (d / "kubepods").is_dir()]
    if Path("/sys/fs/cgroup/kubepods").is_dir():
        roots.append(Path("/sys/fs/cgroup/kubepods"))
    for root in roots:
        for procs in root.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
    for root in roots:
        dirs = sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True)
        for d in [*dirs, root]:
            for _ in range(20):  # a killed process leaves its cgroup a moment later
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _remove_kube_chains() -> None:
    """The kubelet's own chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), which
    ``kube-proxy --cleanup`` leaves: the rules that jump to them first, then the chains."""
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table in ("nat", "filter", "mangle"):
            listed = subprocess.run([tool, "-t", table, "-S"], capture_output=True, text=True, timeout=30,
                                    stdin=subprocess.DEVNULL)
            rules = listed.stdout.splitlines()
            chains = [line.split()[1] for line in rules if line.startswith("-N KUBE-")]
            for line in rules:
                words = line.split()
                if words[:1] == ["-A"] and not words[1].startswith("KUBE-") and any(c in words for c in chains):
                    subprocess.run([tool, "-t", table, "-D", *words[1:]], capture_output=True, timeout=30,
                                   stdin=subprocess.DEVNULL)
            for chain in chains:
                subprocess.run([tool, "-t", table, "-F", chain], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
            for chain in chains:
                subprocess.run([tool, "-t", table, "-X", chain], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _mounts_under(directory: Path) -> list[str]:
    """Mount points at or under ``directory``, deepest first (/proc/self/mountinfo's field 5)."""
    prefix = str(directory.resolve())
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: p.count("/"), reverse=True)


def wait_gone(directory: Path, timeout: float = 10.0) -> None:
    """Until no mount is left under ``directory`` (a lazy unmount finishes in the background)."""
    deadline = time.monotonic() + timeout
    while _mounts_under(directory) and time.monotonic() < deadline:
        time.sleep(0.1)
