"""MultiKueue dispatch on real API servers: how long a manager takes to get its workloads admitted on
two workers, and what its controller costs (issue 42's benchmark; not a timed test).

Starts three tier 1 control planes (etcd + kube-apiserver each: a manager and two workers), Kueue's
CRDs and a ``pykueue controller`` for each (the manager's with the MultiKueue check, its config and the
two MultiKueueClusters; each worker with one ClusterQueue), then creates ``--jobs`` small batch/v1 Jobs
on the manager (``spec.managedBy: kueue.x-k8s.io/multikueue``, one pod of 10m CPU; every queue's quota
holds them all, so nothing waits for quota). Nothing runs pods (no worker has a Job controller): the
figure is dispatch alone.

The driver watches Workloads on all three API servers and stamps, on its own monotonic clock, when each
manager Workload is first seen with ``QuotaReserved`` and when its copy is first seen ``Admitted`` on a
worker. The dispatch latency is the difference (manager quota reservation to remote admission; both
watch deliveries lag alike). The manager controller's CPU seconds (user + system) and peak RSS are read
from /proc for the run, from the first create to the last remote admission.

    python bench/multikueue_dispatch.py [--jobs 1000] [--concurrency 16] [--timeout 1800]

The last line of stdout is one JSON object: jobs, dispatched, perWorker, latency (ms: p50, p90, p99,
max, mean), createSeconds, wallSeconds (first create to last remote admission), managerCpuSeconds,
managerPeakMB, workersCpuSeconds, calibrationMs (``bench/cluster_perf.py``'s host speed figure).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cluster_perf import CRDS, calibration_ms, proc_cpu, proc_hwm_mb, start_controller  # noqa: E402
from pykueue.devcluster.cluster import DevCluster  # noqa: E402
from pykueue.kube import resources as r  # noqa: E402
from pykueue.kube.client import ApiError, Kube  # noqa: E402

NS = "mk-bench"
ORIGIN = "mk-bench"
WORKERS = ("w1", "w2")


def queues(checks: bool, quota: str) -> list[dict[str, Any]]:
    """The Namespace, flavor, ClusterQueue ``cq`` (with the MultiKueue check on the manager) and
    LocalQueue ``lq``."""
    cq: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": quota}]}]}]}
    if checks:
        cq["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mk"}]}
    kueue = "kueue.x-k8s.io/v1beta2"
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
            {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq},
            {"apiVersion": kueue, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": NS},
             "spec": {"clusterQueue": "cq"}}]


def multikueue(kubeconfigs: dict[str, str]) -> list[dict[str, Any]]:
    kueue = "kueue.x-k8s.io/v1beta2"
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pykueue-system"}},
        {"apiVersion": kueue, "kind": "AdmissionCheck", "metadata": {"name": "mk"}, "spec": {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mkc"}}},
        {"apiVersion": kueue, "kind": "MultiKueueConfig", "metadata": {"name": "mkc"},
         "spec": {"clusters": list(kubeconfigs)}}]
    for name, text in kubeconfigs.items():
        docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-secret",
                                                                         "namespace": "pykueue-system"},
                     "data": {"kubeconfig": base64.b64encode(text.encode()).decode()}})
        docs.append({"apiVersion": kueue, "kind": "MultiKueueCluster", "metadata": {"name": name},
                     "spec": {"clusterSource": {"kubeConfig": {"location": f"{name}-secret"}}}})
    return docs


def job(i: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i:05d}", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue", "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]}}}}


def _true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


class Stamps:
    """First sightings on the driver's clock, by Workload name."""

    def __init__(self, expected: int) -> None:
        self.reserved: dict[str, float] = {}
        self.admitted: dict[str, tuple[float, str]] = {}
        self.expected = expected
        self.done = asyncio.Event()

    def manager(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name not in self.reserved and _true(obj, "QuotaReserved"):
            self.reserved[name] = time.monotonic()

    def worker(self, worker: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name not in self.admitted and _true(obj, "Admitted"):
            self.admitted[name] = (time.monotonic(), worker)
            if len(self.admitted) >= self.expected:
                self.done.set()


async def watch(kube: Kube, observe: Any, stop: asyncio.Event) -> None:
    """Every Workload (only NS has any) as it changes, until ``stop``; a watch that ends resumes, 410 relists."""
    listed = await kube.list(r.WORKLOAD)
    for obj in listed["items"]:
        observe(obj)
    rv = listed["metadata"]["resourceVersion"]
    while not stop.is_set():
        try:
            async for ev in kube.watch(r.WORKLOAD, rv):
                obj = ev["object"]
                rv = obj["metadata"].get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    observe(obj)
                if stop.is_set():
                    return
        except ApiError as exc:
            if exc.status != 410:
                raise
            listed = await kube.list(r.WORKLOAD)
            for obj in listed["items"]:
                observe(obj)
            rv = listed["metadata"]["resourceVersion"]


async def apply(kube: Kube, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        res = {"Namespace": r.NAMESPACE, "ResourceFlavor": r.RESOURCE_FLAVOR, "ClusterQueue": r.CLUSTER_QUEUE,
               "LocalQueue": r.LOCAL_QUEUE, "AdmissionCheck": r.ADMISSION_CHECK, "Secret": r.SECRET,
               "MultiKueueConfig": r.MULTIKUEUE_CONFIG, "MultiKueueCluster": r.MULTIKUEUE_CLUSTER}[doc["kind"]]
        try:
            await kube.create(res, doc, doc["metadata"].get("namespace"))
        except ApiError as exc:
            if exc.status != 409:
                raise


async def wait_active(kube: Kube, res: r.Resource, name: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _true(await kube.get(res, name), "Active"):
                return
        except ApiError:
            pass
        await asyncio.sleep(0.5)
    raise SystemExit(f"{res.kind} {name} not Active after {timeout:g}s")


async def drive(manager: DevCluster, workers: dict[str, DevCluster], jobs: int, concurrency: int,
                timeout: float, controller_pid: int, worker_pids: list[int]) -> dict[str, Any]:
    kube = await Kube.connect(str(manager.kubeconfig))
    remotes = {name: await Kube.connect(str(c.kubeconfig)) for name, c in workers.items()}
    try:
        for name in WORKERS:
            await wait_active(kube, r.MULTIKUEUE_CLUSTER, name)
        await wait_active(kube, r.ADMISSION_CHECK, "mk")
        stamps = Stamps(jobs)
        stop = asyncio.Event()
        watchers = [asyncio.create_task(watch(kube, stamps.manager, stop))]
        watchers += [asyncio.create_task(watch(k, lambda o, n=n: stamps.worker(n, o), stop)) for n, k in remotes.items()]
        await asyncio.sleep(0.5)
        cpu0, wcpu0 = proc_cpu(controller_pid), sum(proc_cpu(p) for p in worker_pids)
        start = time.monotonic()
        sem = asyncio.Semaphore(concurrency)

        async def create(i: int) -> None:
            async with sem:
                await kube.create(r.JOB, job(i), NS)

        await asyncio.gather(*(create(i) for i in range(jobs)))
        created = time.monotonic() - start
        try:
            await asyncio.wait_for(stamps.done.wait(), timeout)
        except TimeoutError:
            print(f"timed out: {len(stamps.admitted)} of {jobs} admitted remotely", file=sys.stderr)
        wall = (max((t for t, _ in stamps.admitted.values()), default=start)) - start
        cpu, wcpu = proc_cpu(controller_pid) - cpu0, sum(proc_cpu(p) for p in worker_pids) - wcpu0
        peak = proc_hwm_mb(controller_pid)
        stop.set()
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    finally:
        await kube.close()
        for k in remotes.values():
            await k.close()
    latencies = sorted((t - stamps.reserved[name]) * 1000 for name, (t, _) in stamps.admitted.items()
                       if name in stamps.reserved)
    per_worker = {w: sum(1 for _, n in stamps.admitted.values() if n == w) for w in WORKERS}

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) if latencies else 0.0

    return {"jobs": jobs, "dispatched": len(stamps.admitted), "perWorker": per_worker,
            "latency": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99),
                        "max": round(latencies[-1], 1) if latencies else 0.0,
                        "mean": round(statistics.fmean(latencies), 1) if latencies else 0.0},
            "createSeconds": round(created, 2), "wallSeconds": round(wall, 2),
            "managerCpuSeconds": round(cpu, 2), "managerPeakMB": round(peak, 1),
            "workersCpuSeconds": round(wcpu, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16, help="Job creates in flight at once")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every remote admission")
    parser.add_argument("--keep", action="store_true", help="leave the work directory (logs) in place")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mk-bench-"))
    clusters: list[DevCluster] = []
    controllers = []
    calibration = calibration_ms()
    quota = str(max(1, args.jobs // 50))  # 10m each: room for every job, twice over
    try:
        workers: dict[str, DevCluster] = {}
        for name in (*WORKERS, "manager"):
            cluster = DevCluster(work / name, tier=1)
            cluster.start()
            clusters.append(cluster)
            cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
            cluster.wait_for("Established", "crd", "--all", timeout=60)
            if name != "manager":
                workers[name] = cluster
        for name, cluster in workers.items():
            (work / name).mkdir(exist_ok=True)
            controllers.append(start_controller("pykueue", cluster, work / name, None))
            asyncio.run(_setup(cluster, queues(False, quota)))
        manager = clusters[-1]
        config = work / "manager-config.yaml"
        config.write_text(yaml.safe_dump({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                          "multiKueue": {"origin": ORIGIN, "gcInterval": "1m"}}))
        controller = start_controller("pykueue", manager, work / "manager", str(config))
        controllers.append(controller)
        kubeconfigs = {n: c.kubectl("config", "view", "--flatten", "--raw").stdout for n, c in workers.items()}
        asyncio.run(_setup(manager, queues(True, quota) + multikueue(kubeconfigs)))
        figures = asyncio.run(drive(manager, workers, args.jobs, args.concurrency, args.timeout, controller.pid,
                                    [c.pid for c in controllers[:-1]]))
        figures["calibrationMs"] = [calibration, calibration_ms()]
    finally:
        for proc in controllers:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001 - stopping: kill what does not stop
                proc.kill()
        for cluster in clusters:
            cluster.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    lat = figures["latency"]
    print(f"{figures['dispatched']}/{figures['jobs']} jobs admitted remotely {figures['perWorker']}; dispatch "
          f"latency p50 {lat['p50']:.0f} ms, p90 {lat['p90']:.0f} ms, p99 {lat['p99']:.0f} ms, max {lat['max']:.0f} ms; "
          f"manager controller {figures['managerCpuSeconds']} CPU s, peak {figures['managerPeakMB']} MB")
    print(json.dumps(figures))
    return 0 if figures["dispatched"] == figures["jobs"] else 1


async def _setup(cluster: DevCluster, docs: list[dict[str, Any]]) -> None:
    kube = await Kube.connect(str(cluster.kubeconfig))
    try:
        await apply(kube, docs)
    finally:
        await kube.close()


if __name__ == "__main__":
    raise SystemExit(main())
