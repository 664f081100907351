"""What one Workload write costs the API server, by kind of write: the figures behind the live runner.

Starts a tier 1 control plane with profiling on, installs Kueue's CRDs, opens one watch on Workloads
(as the controller's informer does) and then, phase by phase, sends N requests of one kind with a
fixed concurrency, reading the API server's and etcd's CPU seconds from /proc before and after:

- ``create``: the generator's Workload, as ``bench/cluster_perf.py`` creates it;
- ``ssa-pending`` / ``ssa-admit`` / ``ssa-finish``: server-side apply on ``/status`` of the pending
  conditions, of an admission, of the runner's Finished condition (its own field manager);
- ``merge-admit`` / ``merge-finish``: the same admission and finish as JSON merge patches.

    python bench/apiserver_cost.py [-n 2000] [--concurrency 32] [--no-cel] [--pprof F.txt]

``--no-cel`` strips the CRDs' ``x-kubernetes-validations`` first, to price the CEL rules; ``--pprof``
records a CPU profile of the API server over the admission phases and writes ``go tool pprof -top``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pykueue.devcluster.cluster import DevCluster  # noqa: E402
from pykueue.kube import resources as r  # noqa: E402
from pykueue.kube.client import ApiError, Kube  # noqa: E402

CRDS = ROOT / "config" / "crd" / "kueue.x-k8s.io.yaml"
CLK_TCK = os.sysconf("SC_CLK_TCK")
NS = "perf"
STAMP = "2026-01-01T00:00:00Z"


def proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def strip_cel(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_cel(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [strip_cel(v) for v in node]
    return node


def workload(i: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{i}", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"queueName": "lq", "priority": 50, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": STAMP, "observedGeneration": 1}


PENDING = {"conditions": [
    cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set main: insufficient unused "
         "quota for cpu in flavor default, 1 more needed"),
    cond("Admitted", "False", "NoReservation", "The workload has no reservation")]}
ADMIT = {"conditions": [
    cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
    cond("Admitted", "True", "Admitted", "The workload is admitted")],
    "admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]}}
FINISH = {"conditions": [cond("Finished", "True", "Succeeded", "Job finished successfully")]}


def body(i: int, status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{i}", "namespace": NS}, "status": status}


async def phase(kube: Kube, n: int, concurrency: int, call) -> float:  # noqa: ANN001
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await call(i)

    start = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.monotonic() - start


async def profile(kube: Kube, seconds: int) -> bytes:
    response = await kube._raw("GET", "/debug/pprof/profile", query={"seconds": seconds}, timeout=seconds + 30)
    async with response:
        return await response.read()


async def run(cluster: DevCluster, n: int, concurrency: int, pprof: str | None) -> list[dict[str, Any]]:
    kube = await Kube.connect(str(cluster.kubeconfig))
    kube.api.configuration.connection_pool_maxsize = concurrency
    api_pid = next(p.pid for p in cluster.processes if p.name == "kube-apiserver")
    etcd_pid = next(p.pid for p in cluster.processes if p.name == "etcd")
    events = 0

    async def watch() -> None:
        """One watcher for the whole run, as the controller's informer: the server closes a watch
        whose reader falls behind, so it resumes from the last version it saw."""
        nonlocal events
        rv = (await kube.list(r.WORKLOAD, limit=1))["metadata"]["resourceVersion"]
        while True:
            try:
                async for ev in kube.watch(r.WORKLOAD, rv):
                    rv = ev["object"]["metadata"].get("resourceVersion", rv)
                    events += ev["type"] != "BOOKMARK"
            except ApiError as exc:
                if exc.status != 410:
                    raise
                rv = (await kube.list(r.WORKLOAD, limit=1))["metadata"]["resourceVersion"]

    await kube.create(r.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0.5)
    def wl(base: int):  # noqa: ANN202
        return lambda i: kube.create(r.WORKLOAD, workload(base + i), NS)

    def ssa(base: int, status: dict[str, Any]):  # noqa: ANN202
        return lambda i: kube.apply(r.WORKLOAD, body(base + i, status), manager="kueue-admission",
                                    subresource="status")

    def merge(base: int, status: dict[str, Any]):  # noqa: ANN202
        return lambda i: kube.merge_patch(r.WORKLOAD, f"wl-{base + i}", {"status": status}, NS, "status")

    def append_finish(base: int):  # noqa: ANN202
        ops = [{"op": "add", "path": "/status/conditions/-", "value": FINISH["conditions"][0]}]
        return lambda i: kube.json_patch(r.WORKLOAD, f"wl-{base + i}", ops, NS, "status")

    b, c = n, 2 * n
    phases = [
        ("create", wl(0)), ("ssa-pending", ssa(0, PENDING)), ("ssa-admit", ssa(0, ADMIT)),
        ("ssa-finish", lambda i: kube.apply(r.WORKLOAD, body(i, FINISH), manager="perf-runner",
                                            subresource="status")),
        ("create-b", wl(b)), ("merge-pending", merge(b, PENDING)), ("merge-admit", merge(b, ADMIT)),
        ("jsonpatch-finish", append_finish(b)),
        ("create-c", wl(c)), ("ssa-admit-only", ssa(c, ADMIT)), ("jsonpatch-finish-c", append_finish(c)),
    ]
    rows = []
    profiler = None
    for name, call in phases:
        if pprof and name == "ssa-pending":
            profiler = asyncio.create_task(profile(kube, 25))
        before = (proc_cpu(api_pid), proc_cpu(etcd_pid), events)
        wall = await phase(kube, n, concurrency, call)
        await asyncio.sleep(1.0)  # let the watch deliver
        api, etcd = proc_cpu(api_pid) - before[0], proc_cpu(etcd_pid) - before[1]
        rows.append({"phase": name, "requests": n, "wallSeconds": round(wall, 2),
                     "perSecond": round(n / wall), "apiserverMsPerRequest": round(api * 1000 / n, 2),
                     "etcdMsPerRequest": round(etcd * 1000 / n, 2), "watchEvents": events - before[2]})
        print(json.dumps(rows[-1]), flush=True)
    for i in (0, n, 2 * n):
        obj = await kube.get(r.WORKLOAD, f"wl-{i}", NS)
        print(f"wl-{i}: {len(json.dumps(obj))} bytes, managedFields {len(json.dumps(obj['metadata'].get('managedFields')))}")
    if profiler is not None:
        Path(pprof + ".pb.gz").write_bytes(await profiler)
    watcher.cancel()
    await kube.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--no-cel", action="store_true")
    ap.add_argument("--pprof", metavar="F.txt")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pykueue-apiserver-cost-"))
    cluster = DevCluster(work / "cluster", tier=1, apiserver_flags=("--profiling=true",))
    try:
        cluster.start()
        crds = work / "crds.yaml"
        docs = list(yaml.safe_load_all(CRDS.read_text()))
        if args.no_cel:
            docs = [strip_cel(d) for d in docs]
        crds.write_text(yaml.safe_dump_all(docs))
        cluster.kubectl("apply", "--server-side", "-f", str(crds))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        asyncio.run(run(cluster, args.n, args.concurrency, args.pprof))
        if args.pprof:
            top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=60", args.pprof + ".pb.gz"],
                                 capture_output=True, text=True)
            Path(args.pprof).write_text(top.stdout + top.stderr)
            print(f"profile: {args.pprof}")
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
