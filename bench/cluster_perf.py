"""Upstream's scheduler performance scenario live: a real API server and ``pykueue controller``.

Starts a tier 1 control plane (etcd + kube-apiserver; no kwok: Workloads are created directly, as
upstream's ``test/performance/scheduler`` runner does), installs Kueue's CRDs, starts ``pykueue
controller`` as a separate process with its listeners off (or, with ``--controller upstream``,
upstream Kueue's Go manager and its own CRDs, built from the release ``hack/k8s/kueue`` pins: see
``pykueue/devcluster/upstream_kueue.py``), creates the generator's setup objects
(ResourceFlavor, ClusterQueues, Namespaces, LocalQueues) and then every generated Workload at its
arrival time in real time. Like upstream's runner, each Workload is marked Finished (a ``Finished``
condition on its status) ``runtimeMs`` after it is admitted; the count restarts on re-admission.

A watch on Workloads records, as upstream's recorder does, each Workload's first observation
(creation), its last not-admitted -> admitted transition and its finish, in ms since the first
arrival slot; a watch on ClusterQueues integrates each queue's ``status.flavorsUsage`` over time from
its first status event to its last, which is upstream's usage figure (quota the controller holds,
latencies included). The figures are computed with the simulator's own summary code
(``pykueue.perf.summary``) from a result shaped like the simulator's, and the same config is simulated
in-process so both print side by side. Then the range spec is checked.

    python bench/cluster_perf.py --generator pykueue/examples/perf/baseline/generator.yaml \
        --rangespec pykueue/examples/perf/baseline/rangespec.yaml [--scale 0.05] [--report out.html]

The last line of stdout is one JSON object: controller (which one, with upstream's release), scale, wallSeconds, controllerCpuSeconds, controllerPeakMB,
apiserverCpuSeconds, etcdCpuSeconds, driverCpuSeconds, stealSeconds (CPU time the hypervisor took for
others during the run), calibrationMs (a fixed loop's time before and after: the host's speed),
rangespec ("pass"/"fail"), live and simulated summaries. Exit status 0 when the range spec passes, 1 when it fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import html
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pykueue.devcluster.cluster import DevCluster, die_with_parent  # noqa: E402
from pykueue.kube import resources as r  # noqa: E402
from pykueue.kube.client import ApiError, Kube  # noqa: E402
from pykueue.perf.generator import (  # noqa: E402
    RUNTIME_ANNOTATION,
    GeneratorConfig,
    build_manifests,
    load_generator,
    quantity_value,
)
from pykueue.perf.rangespec import check, load_rangespec  # noqa: E402
from pykueue.perf.summary import PerfObservations, observations_from_result, summarize  # noqa: E402

CRDS = ROOT / "config" / "crd" / "kueue.x-k8s.io.yaml"
CLK_TCK = os.sysconf("SC_CLK_TCK")
FINISH_MANAGER = "kueue-job-controller-Finished-updater"  # upstream's runner: <job controller>-<condition>-updater
KINDS = {
    "ResourceFlavor": r.RESOURCE_FLAVOR, "ClusterQueue": r.CLUSTER_QUEUE, "Cohort": r.COHORT,
    "Namespace": r.NAMESPACE, "LocalQueue": r.LOCAL_QUEUE, "Workload": r.WORKLOAD,
}


# ------------------------------------------------------------------------------------ process stats


def proc_cpu(pid: int) -> float:
    """user + system CPU seconds of a live process (its reaped children included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14)
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def calibration_ms() -> float:
    """Milliseconds a fixed pure-Python loop takes (best of three): this host's speed, which varies by
    a quarter from hour to hour on a shared VM; quoted before and after a run to compare runs."""
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.perf_counter() - t0)
    return round(best * 1000, 1)


def steal_seconds() -> float:
    """CPU time the hypervisor gave to others (all cores): a run with much of it is not comparable."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0


def proc_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def api_requests(cluster: DevCluster) -> dict[str, int]:
    """The API server's request counts by verb and resource[/subresource], from its /metrics."""
    out: dict[str, int] = {}
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.rindex("}")].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("group") not in ("kueue.x-k8s.io", ""):
            continue
        name = f"{labels.get('verb')} {labels.get('resource')}" + (
            f"/{labels['subresource']}" if labels.get("subresource") else "")
        out[name] = out.get(name, 0) + int(float(line.rsplit(" ", 1)[1]))
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# ------------------------------------------------------------------------------------------ config


def scaled(cfg: GeneratorConfig, scale: float) -> GeneratorConfig:
    """Each workloads set keeps ``max(1, round(count * scale))`` rounds (queues are kept whole)."""
    if scale == 1.0:
        return cfg

    def ws(w):  # noqa: ANN001, ANN202
        return dataclasses.replace(w, count=max(1, round(w.count * scale)))

    return dataclasses.replace(cfg, cohorts=tuple(
        dataclasses.replace(cs, queues_sets=tuple(
            dataclasses.replace(qs, workloads_sets=tuple(ws(w) for w in qs.workloads_sets))
            for qs in cs.queues_sets))
        for cs in cfg.cohorts))


def arrival_ms(wl: dict[str, Any]) -> int:
    return round(quantity_value(wl["metadata"]["annotations"]["pykueue.dev/arrival"].rstrip("s")) * 1000)


def runtime_s(wl: dict[str, Any]) -> float:
    return quantity_value(wl["metadata"]["annotations"][RUNTIME_ANNOTATION].rstrip("s"))


# ------------------------------------------------------------------------------------ live recorder


@dataclasses.dataclass
class Seen:
    created: float
    cq: str = ""
    admitted: bool = False
    admitted_at: float | None = None
    admissions: int = 0
    finished_at: float | None = None
    evictions: int = 0
    finish_sent: float | None = None
    finish_done: float | None = None


class Recorder:
    def __init__(self, kube: Kube, runtimes: dict[str, float], t0: float) -> None:
        self.kube = kube
        self.runtimes = runtimes
        self.t0 = t0
        self.seen: dict[str, Seen] = {}
        self.events: list[dict[str, Any]] = []
        self.finished = 0
        self.all_done = asyncio.Event()
        self.tasks: set[asyncio.Task] = set()
        self.finish_errors = 0
        self.create_sent: dict[str, float] = {}
        self.create_done: dict[str, float] = {}
        # ClusterQueue status as upstream's recorder reads it: (time, flavorsUsage[0].resources[0].total)
        self.cq_usage: dict[str, list[tuple[float, float]]] = {}
        self.cq_first: dict[str, float] = {}
        self.cq_last: dict[str, float] = {}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def observe(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key not in self.runtimes:
            return
        t = self.now()
        s = self.seen.get(key)
        if s is None:
            s = self.seen[key] = Seen(created=t)
        status = obj.get("status") or {}
        conds = {c["type"]: c["status"] for c in status.get("conditions") or ()}
        if s.finished_at is None and conds.get("Finished") == "True":
            s.finished_at = t
            if s.admitted:
                self.events.append({"time": t, "type": "Finished", "workload": key, "clusterQueue": s.cq})
            s.admitted = False
            self.finished += 1
            if self.finished == len(self.runtimes):
                self.all_done.set()
            return
        if s.finished_at is not None:
            return
        admitted = conds.get("Admitted") == "True"
        if admitted and not s.admitted:
            s.admitted, s.admitted_at = True, t
            s.admissions += 1
            s.cq = (status.get("admission") or {}).get("clusterQueue", s.cq)
            self.events.append({"time": t, "type": "Admitted", "workload": key, "clusterQueue": s.cq})
            loop = asyncio.get_running_loop()
            loop.call_later(self.runtimes[key], self._finish_later, key, s.admissions)
        elif not admitted and s.admitted:
            s.admitted = False
            s.evictions += 1
            self.events.append({"time": t, "type": "Evicted", "workload": key, "clusterQueue": s.cq})

    def _finish_later(self, key: str, admission: int) -> None:
        s = self.seen[key]
        if s.admitted and s.admissions == admission and s.finished_at is None:
            task = asyncio.create_task(self.finish(key))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def finish(self, key: str) -> None:
        """Set the Finished condition as upstream's runner does: a server-side apply of that one
        condition under its own field manager, which leaves Kueue's conditions (owned by the
        controller's manager) in place. (``apiserver_cost.py`` prices it at 5.9 ms of API server
        CPU; a JSON patch appending the condition costs 6.3-7.0 ms.)"""
        ns, name = key.split("/", 1)
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": name, "namespace": ns},
                "status": {"conditions": [{
                    "type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}}
        self.seen[key].finish_sent = self.now()
        for _ in range(5):
            try:
                await self.kube.apply(r.WORKLOAD, body, manager=FINISH_MANAGER, subresource="status")
                self.seen[key].finish_done = self.now()
                return
            except Exception:  # noqa: BLE001 - retried a few times, then counted
                await asyncio.sleep(0.2)
        self.finish_errors += 1

    async def watch(self, res: r.Resource, observe, *, initial_list: bool) -> None:  # noqa: ANN001
        """Feed ``observe`` every object of ``res`` as it changes until every workload finished; with
        ``initial_list`` the objects that exist now first. A watch that ends resumes; 410 relists."""
        listed = await self.kube.list(res, **({} if initial_list else {"limit": 1}))
        if initial_list:
            for obj in listed["items"]:
                observe(obj)
        rv = listed["metadata"]["resourceVersion"]
        while not self.all_done.is_set():
            try:
                async for ev in self.kube.watch(res, rv):
                    obj = ev["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        observe(obj)
                    if self.all_done.is_set():
                        return
            except ApiError as exc:
                if exc.status != 410:  # too old: relist
                    raise
                listed = await self.kube.list(res)
                for obj in listed["items"]:
                    observe(obj)
                rv = listed["metadata"]["resourceVersion"]

    def observe_cq(self, obj: dict[str, Any]) -> None:
        """Upstream's recorder integrates each ClusterQueue's ``status.flavorsUsage`` over time, from
        the queue's first status event to its last; the same points are kept here."""
        name, t = obj["metadata"]["name"], max(0.0, self.now())
        self.cq_first.setdefault(name, t)
        self.cq_last[name] = t
        usage = ((obj.get("status") or {}).get("flavorsUsage") or [{}])[0].get("resources") or [{}]
        total = quantity_value(str(usage[0].get("total", "0")))
        points = self.cq_usage.setdefault(name, [])
        if not points or points[-1][1] != total:
            points.append((t, total))

    def cluster_queue_observations(self, obs: PerfObservations) -> PerfObservations:
        """The run's observations with each queue's usage taken from its status, as upstream's."""
        cqs = [dataclasses.replace(cq, usage=tuple(self.cq_usage.get(cq.name, ())),
                                   created_at=self.cq_first.get(cq.name, 0.0),
                                   last_event_at=self.cq_last.get(cq.name))
               for cq in obs.cluster_queues]
        return dataclasses.replace(obs, cluster_queues=cqs)

    def lags(self) -> dict[str, float]:
        """Average latencies (ms) of the runner's own requests and of the watch behind them."""
        def avg(pairs):  # noqa: ANN001, ANN202
            vals = [b - a for a, b in pairs if a is not None and b is not None]
            return round(sum(vals) * 1000 / len(vals), 1) if vals else None
        seen = self.seen
        return {
            "createRequestMs": avg((self.create_sent.get(k), self.create_done.get(k)) for k in seen),
            "createToWatchMs": avg((self.create_sent.get(k), s.created) for k, s in seen.items()),
            "finishRequestMs": avg((s.finish_sent, s.finish_done) for s in seen.values()),
            "finishToWatchMs": avg((s.finish_sent, s.finished_at) for s in seen.values()),
            "lateFinishMs": avg((s.admitted_at + self.runtimes[k] if s.admitted_at is not None else None,
                                 s.finish_sent) for k, s in seen.items()),
        }

    def result(self, workloads: list[dict[str, Any]], end: float) -> dict[str, Any]:
        """A result shaped like the simulator's (the parts ``observations_from_result`` reads)."""
        out = []
        for wl in workloads:
            meta = wl["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            s = self.seen.get(key)
            if s is None:
                continue
            out.append({"namespace": meta["namespace"], "name": meta["name"], "createdAt": s.created,
                        "admittedAt": s.admitted_at, "finishedAt": s.finished_at, "clusterQueue": s.cq,
                        "evictions": s.evictions})
        return {"workloads": out, "events": sorted(self.events, key=lambda e: e["time"]), "endTime": end}


async def create_setup(kube: Kube, setup: list[dict[str, Any]]) -> None:
    for kind in ("Namespace", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue"):
        docs = [d for d in setup if d["kind"] == kind]
        await asyncio.gather(*(kube.create(KINDS[kind], d, d["metadata"].get("namespace")) for d in docs))


async def wait_active(kube: Kube, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = (await kube.list(r.CLUSTER_QUEUE))["items"]
        active = {i["metadata"]["name"] for i in items
                  if any(c["type"] == "Active" and c["status"] == "True"
                         for c in (i.get("status") or {}).get("conditions") or ())}
        if active >= set(names):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("cluster queues did not become Active")


async def play(kubeconfig: str, manifests: list[dict[str, Any]], timeout: float) -> tuple[dict[str, Any], Recorder, dict]:
    setup = [m for m in manifests if m["kind"] != "Workload"]
    workloads = [m for m in manifests if m["kind"] == "Workload"]
    runtimes = {f"{w['metadata']['namespace']}/{w['metadata']['name']}": runtime_s(w) for w in workloads}
    arrivals = [arrival_ms(w) for w in workloads]
    workloads = [{**w, "metadata": {k: v for k, v in w["metadata"].items() if k != "annotations"}} for w in workloads]
    kube = await Kube.connect(kubeconfig)
    kube.api.configuration.connection_pool_maxsize = 64
    try:
        await create_setup(kube, setup)
        await wait_active(kube, [m["metadata"]["name"] for m in setup if m["kind"] == "ClusterQueue"])
        t0 = time.monotonic() + 0.5
        rec = Recorder(kube, runtimes, t0)
        watcher = asyncio.create_task(rec.watch(r.WORKLOAD, rec.observe, initial_list=False))
        cq_watcher = asyncio.create_task(rec.watch(r.CLUSTER_QUEUE, rec.observe_cq, initial_list=True))
        await asyncio.sleep(0.3)
        stats = {"createErrors": 0, "maxCreateLagMs": 0}
        pending: set[asyncio.Task] = set()
        sem = asyncio.Semaphore(48)

        async def create(doc: dict[str, Any]) -> None:
            key = f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"
            async with sem:
                rec.create_sent[key] = rec.now()
                for _ in range(5):
                    try:
                        await kube.create(r.WORKLOAD, doc, doc["metadata"]["namespace"])
                        rec.create_done[key] = rec.now()
                        return
                    except ApiError as exc:
                        if exc.status == 409:
                            return
                    except Exception:  # noqa: BLE001,S112
                        pass
                    await asyncio.sleep(0.2)
                stats["createErrors"] += 1

        i = 0
        while i < len(workloads):
            at = arrivals[i]
            delay = t0 + at / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                stats["maxCreateLagMs"] = max(stats["maxCreateLagMs"], round(-delay * 1000))
            while i < len(workloads) and arrivals[i] == at:
                task = asyncio.create_task(create(workloads[i]))
                pending.add(task)
                task.add_done_callback(pending.discard)
                i += 1
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(rec.all_done.wait(), timeout)
        end = rec.now()
        for task in (watcher, cq_watcher):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        stats["finishErrors"] = rec.finish_errors
        stats["lags"] = rec.lags()
        stats["finished"] = rec.finished
        stats["workloads"] = len(workloads)
        return rec.result(workloads, end), rec, stats
    finally:
        await kube.close()


# -------------------------------------------------------------------------------------- controllers


def controller_label(which: str) -> str:
    """What the output calls the controller under test, upstream's with the release actually built."""
    if which == "upstream":
        from pykueue.devcluster import upstream_kueue

        return f"upstream Kueue {upstream_kueue.version()} (Go)"
    return "pykueue controller"


def crd_paths(which: str) -> list[Path]:
    """The CRDs the controller under test ships: pykueue's, or those of upstream's built release."""
    if which == "upstream":
        from pykueue.devcluster import upstream_kueue

        return upstream_kueue.crd_files(upstream_kueue.ensure())
    return [CRDS]


def start_controller(which: str, cluster: DevCluster, work: Path, config: str | None) -> subprocess.Popen:
    """The controller under test as its own process, once it says it is ready (pykueue: its log line;
    upstream: its readiness probe), its output in ``work/controller.log``."""
    log = work / "controller.log"
    health = None
    if which == "upstream":
        from pykueue.devcluster import upstream_kueue

        cmd, health = upstream_kueue.manager_command(cluster.kubeconfig, work / "upstream")
    else:
        cmd = [sys.executable, "-m", "pykueue.cli", "controller", "--kubeconfig", str(cluster.kubeconfig),
               "--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0",
               "--visibility-port=0"]
        if config:
            cmd += ["--config", config]
    with open(log, "ab") as out:
        controller = subprocess.Popen(cmd, stdout=out, stderr=out, cwd=ROOT, preexec_fn=die_with_parent)
    deadline = time.monotonic() + 120
    while not (ready(health) if health else b"controller ready" in log.read_bytes()):
        if controller.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"controller did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return controller


def ready(port: int) -> bool:
    """Whether a controller-runtime manager's readiness probe on ``port`` answers 200."""
    import urllib.request

    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through $http_proxy
    try:
        with direct.open(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


# ------------------------------------------------------------------------------------------ output


def simulate(manifests: list[dict[str, Any]], source: str) -> tuple[dict[str, Any], float]:
    from pykueue.api.loader import load_documents
    from pykueue.sim.result import build_result
    from pykueue.sim.simulator import Simulation

    start = time.process_time()
    inputs, problems = load_documents(manifests, source=source)
    if problems:
        raise SystemExit("\n".join(str(p) for p in problems))
    result = build_result(Simulation(inputs, record_usage=True).run())
    return summarize(observations_from_result(result, manifests)), time.process_time() - start


def side_by_side(live: dict[str, Any], sim: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    rows: list[tuple[str, Any, Any]] = [("wallMs", live.get("wallMs"), sim.get("wallMs"))]
    for cls in sorted(set(live["clusterQueueClasses"]) | set(sim["clusterQueueClasses"])):
        a, b = live["clusterQueueClasses"].get(cls, {}), sim["clusterQueueClasses"].get(cls, {})
        rows.append((f"cq {cls} avgUsagePercent", a.get("avgUsagePercent"), b.get("avgUsagePercent")))
    for cls in sorted(set(live["workloadClasses"]) | set(sim["workloadClasses"])):
        a, b = live["workloadClasses"].get(cls, {}), sim["workloadClasses"].get(cls, {})
        for k in ("count", "avgTimeToAdmissionMs", "maxTimeToAdmissionMs", "avgTimeToFinishMs", "totalEvictions"):
            rows.append((f"wl {cls} {k}", a.get(k), b.get(k)))
    return rows


def profile_summary(path: str, top: int = 15) -> list[str]:
    """Top self-time frames and top inclusive functions of a py-spy ``--format raw`` file."""
    self_t: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        count = int(n)
        total += count
        frames = stack.split(";")
        self_t[frames[-1]] = self_t.get(frames[-1], 0) + count
        for f in set(frames):
            incl[f] = incl.get(f, 0) + count
    if not total:
        return ["profile: no samples"]
    out = [f"profile: {total} samples (py-spy samples the controller whether busy or idle)", "top self:"]
    out += [f"  {n * 100 / total:5.1f}%  {f}" for f, n in sorted(self_t.items(), key=lambda kv: -kv[1])[:top]]
    out.append("top inclusive:")
    out += [f"  {n * 100 / total:5.1f}%  {f}" for f, n in sorted(incl.items(), key=lambda kv: -kv[1])[:top * 2]]
    return out


def write_report(path: str, rows: list[tuple[str, Any, Any]], figures: dict[str, Any], failures: list[str]) -> None:
    body = "".join(f"<tr><td>{html.escape(n)}</td><td>{a}</td><td>{b}</td></tr>" for n, a, b in rows)
    figs = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                   for k, v in figures.items() if not isinstance(v, dict))
    fails = "".join(f"<li>{html.escape(f)}</li>" for f in failures) or "<li>rangespec passes</li>"
    Path(path).write_text(
        "<!doctype html><meta charset=utf-8><title>pykueue live performance</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 10px;border-bottom:1px solid #ddd}</style>"
        f"<h1>pykueue live performance</h1><h2>Process figures</h2><table>{figs}</table>"
        f"<h2>Live vs simulated</h2><table><tr><th>figure</th><th>live</th><th>simulated</th></tr>{body}</table>"
        f"<h2>Range spec</h2><ul>{fails}</ul>")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator", required=True)
    ap.add_argument("--rangespec", required=True)
    ap.add_argument("--report", metavar="F.html")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each workloads set's count (quick runs)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every workload to finish")
    ap.add_argument("--config", help="a Kueue Configuration for the controller")
    ap.add_argument("--keep", action="store_true", help="leave the work directory (logs) in place")
    ap.add_argument("--profile", metavar="F.txt", help="py-spy the controller during the run; collapsed stacks to F.txt")
    ap.add_argument("--controller", choices=("pykueue", "upstream"), default="pykueue",
                    help="the controller under test: pykueue controller, or upstream Kueue's Go manager built "
                         "from the Go module hack/k8s/kueue pins (python -m pykueue.devcluster.upstream_kueue)")
    args = ap.parse_args()
    if args.controller == "upstream" and (args.config or args.profile):
        ap.error("--config and --profile are pykueue controller's: not with --controller upstream")
    label = controller_label(args.controller)

    cfg = scaled(load_generator(args.generator), args.scale)
    spec = load_rangespec(args.rangespec)
    manifests = build_manifests(cfg)
    n_wl = sum(1 for m in manifests if m["kind"] == "Workload")
    print(f"controller: {label}", flush=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{cfg.cluster_queue_count} cluster queues, {n_wl} workloads (scale {args.scale})", flush=True)

    work = Path(tempfile.mkdtemp(prefix="pykueue-cluster-perf-"))
    cluster = DevCluster(work / "cluster", tier=1)
    controller: subprocess.Popen | None = None
    try:
        started = time.monotonic()
        cluster.start()
        for crds in crd_paths(args.controller):
            cluster.kubectl("apply", "--server-side", "-f", str(crds))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        print(f"control plane and CRDs ready in {time.monotonic() - started:.1f} s at {work}", flush=True)
        controller = start_controller(args.controller, cluster, work, args.config)
        print(f"{label} pid {controller.pid} ready; playing {n_wl} workloads", flush=True)
        api_pid = next(p.pid for p in cluster.processes if p.name == "kube-apiserver")
        etcd_pid = next(p.pid for p in cluster.processes if p.name == "etcd")
        base = {"api": proc_cpu(api_pid), "etcd": proc_cpu(etcd_pid), "ctl": proc_cpu(controller.pid)}
        spy = None
        if args.profile:
            spy = subprocess.Popen(["py-spy", "record", "--pid", str(controller.pid), "--format", "raw",
                                    "--rate", "20", "--output", args.profile, "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        calibration0 = calibration_ms()
        driver0 = time.process_time()
        steal0 = steal_seconds()
        wall0 = time.monotonic()
        result, rec, stats = asyncio.run(play(str(cluster.kubeconfig), manifests, args.timeout))
        run_wall = time.monotonic() - wall0
        figures: dict[str, Any] = {
            "controllerCpuSeconds": round(proc_cpu(controller.pid), 2),
            "controllerCpuSecondsDuringRun": round(proc_cpu(controller.pid) - base["ctl"], 2),
            "controllerPeakMB": round(proc_hwm_mb(controller.pid), 1),
            "apiserverCpuSeconds": round(proc_cpu(api_pid) - base["api"], 2),
            "etcdCpuSeconds": round(proc_cpu(etcd_pid) - base["etcd"], 2),
            "driverCpuSeconds": round(time.process_time() - driver0, 2),
            "runnerWallSeconds": round(run_wall, 2),
            "stealSeconds": round(steal_seconds() - steal0, 2),
            "calibrationMs": [calibration0, calibration_ms()],
            **stats,
        }
        figures["apiRequests"] = api_requests(cluster)
        if spy is not None:
            spy.send_signal(2)
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy.wait(timeout=30)
    finally:
        if controller is not None and controller.poll() is None:
            controller.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                controller.wait(timeout=20)
        cluster.stop()
    live = summarize(rec.cluster_queue_observations(observations_from_result(result, manifests)))
    figures = {"controller": label, "scale": args.scale, "wallSeconds": round(live["wallMs"] / 1000, 2), **figures}
    sim, sim_cpu = simulate(manifests, args.generator)
    failures = check(live, spec)
    figures["rangespec"] = "pass" if not failures else "fail"
    figures["simulateCpuSeconds"] = round(sim_cpu, 2)

    print()
    for k, v in figures.items():
        print(f"{k:32s} {v}")
    rows = side_by_side(live, sim)
    print(f"\n{'figure':40s} {'live':>14s} {'simulated':>14s}")
    for name, a, b in rows:
        print(f"{name:40s} {a!s:>14s} {b!s:>14s}")
    for f in failures:
        print(f"rangespec: {f}")
    if args.profile and Path(args.profile).exists():
        print("\n".join(profile_summary(args.profile)))
    if args.report:
        write_report(args.report, rows, figures, failures)
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures["driverPeakMB"] = round(usage.ru_maxrss / 1024, 1)
    print(json.dumps({**figures, "failures": failures, "live": live, "simulated": sim}))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
