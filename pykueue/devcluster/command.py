"""`pykueue dev-cluster up|env|down|build`: the test control plane from the command line."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dev-cluster",
        help="start a real Kubernetes control plane on loopback (etcd, kube-apiserver, ...)",
        description="Start, inspect and stop a local control plane built from pinned Go modules.",
    )
    verbs = p.add_subparsers(dest="verb", required=True)
    up = verbs.add_parser("up", help="build what is missing, start the cluster in the background")
    up.add_argument("--dir", required=True, type=Path, help="where its kubeconfig, certificates and logs go")
    up.add_argument("--tier", type=int, choices=(1, 2, 3), default=1,
                    help="1: etcd + kube-apiserver; 2: plus controller manager, scheduler and kwok nodes; "
                         "3: plus one real node (containerd, kubelet, kube-proxy; root) with the project's image")
    up.add_argument("--nodes", type=Path, metavar="FILE",
                    help="tier 2: Node manifests (labels, taints, capacity) that kwok fakes")
    up.add_argument("--pod-run-time", metavar="DURATION", default="0s",
                    help="tier 2: how long a Job's pod runs before kwok completes it (e.g. 30s, 2m; default 0s: at "
                         "once); a pod's annotation pod-complete.stage.kwok.x-k8s.io/delay still sets its own")
    up.add_argument("--addons", default="", metavar="LIST",
                    help="tier 2: comma-separated operators to run too; 'ray': KubeRay's CRDs and operator "
                         "(built from its Go module on first use); 'jobset', 'lws': JobSet's and "
                         "LeaderWorkerSet's CRDs and managers with their webhooks (built from the source "
                         "archives in ../shared/third_party or $PYKUEUE_THIRD_PARTY on first use)")
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness")
    env = verbs.add_parser("env", help="print shell lines that set KUBECONFIG and put kubectl and helm on PATH")
    env.add_argument("--dir", required=True, type=Path)
    down = verbs.add_parser("down", help="stop every process the cluster started")
    down.add_argument("--dir", required=True, type=Path)
    build = verbs.add_parser("build", help="build (or reuse) the binaries and print their directory")
    build.add_argument("--addons", default="", metavar="LIST", help="also build these addons ('ray', 'jobset', 'lws')")


def _run_time(text: str) -> float:
    from pykueue.api.durations import parse_duration
    from pykueue.devcluster.cluster import ClusterError

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise ClusterError(f"--pod-run-time: {exc}") from None
    if seconds < 0:
        raise ClusterError(f"--pod-run-time: {text!r} is negative")
    return seconds


def _addons(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a.strip() for a in text.split(",") if a.strip()))


def run(args: argparse.Namespace) -> int:
    """Exit 0 on success, 2 with one `pykueue: error:` line otherwise."""
    # Imported here, not at the top: every CLI run imports this module for its arguments, and the
    # builders bring subprocess, shutil and tempfile, which ``simulate`` never needs.
    from pykueue.devcluster import archived, binaries, helm, kuberay
    from pykueue.devcluster.cluster import ClusterError, DevCluster, check_addons, load_nodes  # cryptography

    try:
        if args.verb == "build":
            addons = _addons(args.addons)
            check_addons(addons, 2)
            print(binaries.ensure())
            if "ray" in addons:
                print(kuberay.ensure())
            for addon in addons:
                if addon in archived.BY_ADDON:
                    print(archived.ensure(archived.BY_ADDON[addon]))
        elif args.verb == "up":
            if args.nodes and args.tier < 2:
                raise ClusterError("--nodes needs --tier 2 (tier 1 has no kubelets, fake or real)")
            nodes = load_nodes(args.nodes) if args.nodes else None
            run_time = _run_time(args.pod_run_time)
            if run_time and args.tier < 2:
                raise ClusterError("--pod-run-time needs --tier 2 (tier 1 runs no pods)")
            addons = _addons(args.addons)
            check_addons(addons, args.tier)
            cluster = DevCluster(args.dir.resolve(), tier=args.tier, pod_run_time=run_time, addons=addons)
            cluster.start(nodes, detach=True, timeout=args.timeout)
            print(cluster.kubeconfig)
        elif args.verb == "env":
            cluster = DevCluster.load(args.dir.resolve())
            print(f"export KUBECONFIG={shlex.quote(str(cluster.kubeconfig))}")
            helm_dir = helm.ensure(log=sys.stderr).parent  # built once into the cache, like kubectl
            dirs = ":".join(shlex.quote(str(d)) for d in (cluster.bin_dir, helm_dir) if d is not None)
            print(f"export PATH={dirs}:\"$PATH\"")
        elif args.verb == "down":
            cluster = DevCluster.load(args.dir.resolve())
            stopped = cluster.stop()
            print(f"stopped {', '.join(stopped) if stopped else 'nothing (no process was running)'}")
    except (ClusterError, binaries.BuildError, OSError) as exc:
        print(f"pykueue: error: {exc}", file=sys.stderr)
        return 2
    return 0
