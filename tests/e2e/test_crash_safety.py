"""Crash safety (issues 11 and 21): Workloads flow while `pykueue controller` is killed with SIGKILL
and restarted three times and the API server is restarted once, and while the controller is down the
objects are shaken (object chaos, webhooks off as the issue tried it): a ClusterQueue holding quota is
deleted, its finalizer forced away and the queue re-created; a quota is patched invalid and back
after the restart; a LocalQueue is deleted and restored and a flavor in use deleted. A checker watching the API's storage
(every revision of every Workload, from etcd, so nothing is missed across the API server's restart)
and polling the ClusterQueues through the API must never see a ClusterQueue over its quota or a
Workload admitted twice, and every Workload must end Finished.

The test plays the job side itself: a Workload it sees holding quota is "run" for a moment and then
marked Finished (the condition upstream's job integration writes), with its own field manager.

Definitions the checker holds the API to, at every resourceVersion of every Workload:

- over quota: for each ClusterQueue, flavor and resource, the requests of the Workloads that hold
  quota in it (QuotaReserved=True and not Finished; pod requests x the admitted count) must be at most
  nominal + borrowingLimit, and for the cohort at most the sum of its queues' nominal quotas; the
  ClusterQueues' own `status.flavorsReservation` is held to the same limits;
- admitted twice: a Workload whose QuotaReserved condition becomes True a second time, or whose
  `status.admission` changes while it stays True. No preemption, stop policy or timeout is configured,
  so nothing may evict a Workload either: an Evicted=True condition is a violation too.

The Workloads that arrive while the controller is down have a higher priority, so a controller that
came back without the admissions recorded in the API would hand their quota out again: with
`translate.workload` made to drop `status.admission`, this test fails ("reserved quota a second time").
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import aiohttp
import pytest

from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.quantity import parse_quantity
from tests.e2e.conftest import Kueue

pytestmark = pytest.mark.e2e

WORKLOADS = 200
FIRST_BATCH = 120  # the rest arrive in batches while the controller and the API server come and go
# How long the test's "job" holds an admitted Workload before it finishes: some longer than a
# restart takes, so that Workloads run across every restart.
RUN_SECONDS = (0.5, 1.0, 2.0, 5.0)
FINISHER = "crash-test-job-controller"
HIGH = 100
# (queue, flavor) -> (nominal cpu, borrowingLimit or None): two queues of one cohort, each able to
# borrow some of the other's quota, so the limits at both levels are exercised.
QUOTAS = {
    ("a", "f1"): ("4", "2"),
    ("a", "f2"): ("2", None),
    ("b", "f1"): ("4", None),
    ("b", "f2"): ("2", "0"),
}


def manifests(ns: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f"{ns}-{f}"}}
        for f in ("f1", "f2")
    ]
    docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                 "metadata": {"name": f"{ns}-high"}, "value": HIGH})
    for q in ("a", "b"):
        flavors = []
        for f in ("f1", "f2"):
            nominal, borrowing = QUOTAS[(q, f)]
            resource: dict[str, Any] = {"name": "cpu", "nominalQuota": nominal}
            if borrowing is not None:
                resource["borrowingLimit"] = borrowing
            flavors.append({"name": f"{ns}-{f}", "resources": [resource]})
        docs.append({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": f"{ns}-{q}"},
            "spec": {"cohortName": ns, "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]},
        })
        docs.append({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": f"lq-{q}", "namespace": ns}, "spec": {"clusterQueue": f"{ns}-{q}"},
        })
    return docs


def workload(ns: str, i: int, rng: random.Random) -> dict[str, Any]:
    """The first batch at the default priority; the later ones, which arrive while the controller or
    the API server is away, above it: a restarted controller that forgot what was admitted would give
    them the quota the running Workloads still hold, and the checker would see the overcommit."""
    cpu = rng.choice(["500m", "1", "1500m", "2"])
    spec: dict[str, Any] = {"queueName": f"lq-{'ab'[i % 2]}", "podSets": [{
        "name": "main", "count": rng.choice([1, 1, 2]),
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}},
    }]}
    if i >= FIRST_BATCH:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": f"{ns}-high"}
        spec["priority"] = HIGH
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{i:03d}", "namespace": ns}, "spec": spec}


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}


def charged(obj: dict[str, Any]) -> dict[tuple[str, str, str], Fraction]:
    """(clusterQueue, flavor, resource) -> what the Workload holds, from its spec and admission."""
    conds = conditions(obj)
    admission = (obj.get("status") or {}).get("admission")
    if conds.get("QuotaReserved") != "True" or conds.get("Finished") == "True" or not admission:
        return {}
    pod_sets = {ps["name"]: ps for ps in obj["spec"]["podSets"]}
    out: dict[tuple[str, str, str], Fraction] = Counter()
    for psa in admission["podSetAssignments"]:
        requests: Counter = Counter()
        for container in pod_sets[psa["name"]]["template"]["spec"]["containers"]:
            for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
                requests[name] += parse_quantity(value)
        for resource, flavor in psa["flavors"].items():
            out[(admission["clusterQueue"], flavor, resource)] += requests[resource] * psa["count"]
    return out


@dataclass
class Checker:
    """Follows every Workload of the namespace through one watch and holds it to the invariants."""

    ns: str
    limits: dict[tuple[str, str, str], Fraction]
    cohort_limits: dict[tuple[str, str], Fraction]
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    charges: dict[str, dict[tuple[str, str, str], Fraction]] = field(default_factory=dict)
    usage: Counter = field(default_factory=Counter)  # the sum of `charges`, kept as they change
    reservations: Counter = field(default_factory=Counter)  # times QuotaReserved became True
    reserved_at: dict[str, float] = field(default_factory=dict)  # when the checker first saw it hold quota
    violations: list[str] = field(default_factory=list)
    finished: set[str] = field(default_factory=set)
    events = 0
    peak: Fraction = Fraction(0)

    def see(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        old = self.objects.get(name)
        self.objects[name] = obj
        self.events += 1
        before, after = conditions(old or {}), conditions(obj)
        if after.get("QuotaReserved") == "True":
            if before.get("QuotaReserved") != "True":
                self.reservations[name] += 1
                self.reserved_at.setdefault(name, time.monotonic())
                if self.reservations[name] > 1:
                    self.violations.append(f"{name} reserved quota a second time")
            elif old is not None and (old.get("status") or {}).get("admission") != obj["status"].get("admission"):
                self.violations.append(f"{name}: admission changed while reserved: "
                                       f"{old['status'].get('admission')} -> {obj['status'].get('admission')}")
        if after.get("Evicted") == "True":
            self.violations.append(f"{name} evicted: {obj['status'].get('conditions')}")
        if after.get("Finished") == "True":
            self.finished.add(name)
        charge = charged(obj)
        self.usage.subtract(self.charges.get(name, {}))
        self.usage.update(charge)
        self.charges[name] = charge
        self.check_usage(name)

    def check_usage(self, changed: str) -> None:
        cohort: Counter = Counter()
        for (cq, flavor, resource), value in self.usage.items():
            cohort[(flavor, resource)] += value
            limit = self.limits.get((cq, flavor, resource))
            if limit is None or value > limit:
                self.violations.append(f"after {changed}: {cq} holds {value} {resource} of {flavor}, limit {limit}")
        for key, value in cohort.items():
            self.peak = max(self.peak, value)
            if value > self.cohort_limits[key]:
                self.violations.append(f"after {changed}: the cohort holds {value} of {key}, limit "
                                       f"{self.cohort_limits[key]}")

    def check_cluster_queue(self, cq: dict[str, Any]) -> None:
        name = cq["metadata"]["name"]
        for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
            for res in flavor["resources"]:
                total = parse_quantity(res["total"])
                limit = self.limits.get((name, flavor["name"], res["name"]))
                if limit is not None and total > limit:
                    self.violations.append(f"{name} status reports {total} {res['name']} of {flavor['name']}")

    async def watch(self, etcd: str, stop: asyncio.Event) -> None:
        """Every revision of every Workload of the namespace, read from the API server's storage:
        a range read, then one etcd watch from the next revision. Unlike a watch on the API server,
        whose restarted watch cache cannot resume from before the restart (410 Gone, then a relist
        that skips what changed in between), this sees each state the API could ever have served."""
        prefix = f"/registry/kueue.x-k8s.io/workloads/{self.ns}/".encode()
        keys = {"key": base64.b64encode(prefix).decode(),
                "range_end": base64.b64encode(prefix[:-1] + b"0").decode()}  # "/" + 1: the prefix's end
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{etcd}/v3/kv/range", json=keys) as response:
                listing = await response.json()
            for kv in listing.get("kvs") or []:
                self.see(json.loads(base64.b64decode(kv["value"])))
            start = int(listing["header"]["revision"]) + 1
            body = {"create_request": {**keys, "start_revision": str(start)}}
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            async with session.post(f"{etcd}/v3/watch", json=body, timeout=timeout) as response:
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            self._etcd_result(json.loads(line).get("result") or {})
                    if stop.is_set():
                        return

    def _etcd_result(self, result: dict[str, Any]) -> None:
        if result.get("canceled") or result.get("compact_revision"):
            raise AssertionError(f"the checker's etcd watch ended: {result}")
        for event in result.get("events") or []:
            if event.get("type") != "DELETE":
                self.see(json.loads(base64.b64decode(event["kv"]["value"])))

    async def poll_cluster_queues(self, kube: Kube, names: list[str], stop: asyncio.Event) -> None:
        while not stop.is_set():
            for name in names:
                try:
                    self.check_cluster_queue(await kube.get(r.CLUSTER_QUEUE, name))
                except Exception:  # noqa: BLE001,S112 - the API server is restarting
                    continue
            await asyncio.sleep(0.5)


async def finish_admitted(kube: Kube, checker: Checker, runs: dict[str, float], stop: asyncio.Event) -> None:
    """The test's job side: a Workload that has held quota for its run time is marked Finished."""
    while not stop.is_set():
        now = time.monotonic()
        due = [n for n, at in checker.reserved_at.items() if now - at >= runs[n] and n not in checker.finished]
        for name in due:
            body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                    "metadata": {"name": name, "namespace": checker.ns},
                    "status": {"conditions": [{
                        "type": "Finished", "status": "True", "reason": "Succeeded",
                        "message": "Job finished successfully",
                        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}}
            try:
                await kube.apply(r.WORKLOAD, body, manager=FINISHER, subresource="status")
            except Exception:  # noqa: BLE001,S112 - the API server is away: the next pass retries
                continue
        await asyncio.sleep(0.1)


async def create_all(kube: Kube, docs: list[dict[str, Any]]) -> None:
    """Create each object, retrying while the API server is away; an object that exists is done."""
    for doc in docs:
        while True:
            try:
                await kube.create(r.WORKLOAD, doc, doc["metadata"]["namespace"])
                break
            except ApiError as exc:
                if exc.status == 409:
                    break
                await asyncio.sleep(0.2)
            except Exception:  # noqa: BLE001 - connection refused during the restart
                await asyncio.sleep(0.2)


def chaos_while_down(kueue: Kueue, ns: str, step: int) -> None:
    """Shake the objects while no controller runs (step 0, 1, 2: one per controller kill)."""
    kubectl = kueue.cluster.kubectl
    by_name = {d["metadata"]["name"]: d for d in manifests(ns)}
    if step == 0:  # a ClusterQueue holding quota deleted, its finalizer forced away, re-created
        kubectl("delete", "clusterqueue", f"{ns}-b", "--wait=false")
        kubectl("patch", "clusterqueue", f"{ns}-b", "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                check=False)
        deadline = time.monotonic() + 30
        while kueue.get("clusterqueue", f"{ns}-b") is not None:
            assert time.monotonic() < deadline, "the ClusterQueue was not deleted"
            time.sleep(0.2)
        kueue.apply([by_name[f"{ns}-b"]])
    elif step == 1:  # a quota made invalid (webhooks off); made valid again after the restart
        kubectl("patch", "clusterqueue", f"{ns}-a", "--type=json", "-p", json.dumps([{
            "op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": "-1"}]))
    else:  # a LocalQueue deleted and restored, a flavor in use deleted (its finalizer keeps it)
        kubectl("delete", "localqueue", "lq-a", "-n", ns)
        kueue.apply([by_name["lq-a"]])
        kubectl("delete", "resourceflavor", f"{ns}-f2", "--wait=false")


def chaos_after_restart(kueue: Kueue, ns: str, step: int) -> None:
    if step == 1:
        time.sleep(3)  # the restarted controller reads the invalid quota first
        nominal = QUOTAS[("a", "f1")][0]
        kueue.cluster.kubectl("patch", "clusterqueue", f"{ns}-a", "--type=json", "-p", json.dumps([{
            "op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": nominal}]))


def test_kill_and_restart_never_overcommit_or_admit_twice(kueue: Kueue, ns: str) -> None:
    kueue.apply(manifests(ns))
    limits: dict[tuple[str, str, str], Fraction] = {}
    cohort_limits: Counter = Counter()
    for (q, f), (nominal, borrowing) in QUOTAS.items():
        nominal_q = parse_quantity(nominal)
        cohort_limits[(f"{ns}-{f}", "cpu")] += nominal_q
        # without a borrowingLimit, the cohort's limit is the only one
        limits[(f"{ns}-{q}", f"{ns}-{f}", "cpu")] = nominal_q + (
            parse_quantity(borrowing) if borrowing is not None else Fraction(10**9))
    rng = random.Random(11)
    docs = [workload(ns, i, rng) for i in range(WORKLOADS)]
    runs = {d["metadata"]["name"]: rng.choice(RUN_SECONDS) for d in docs}
    checker = Checker(ns, limits, cohort_limits)
    restarts: list[tuple[str, float]] = []

    async def scenario() -> None:
        kube = await Kube.connect(str(kueue.cluster.kubeconfig))
        stop = asyncio.Event()
        tasks = [asyncio.create_task(checker.watch(f"http://127.0.0.1:{kueue.cluster.ports['etcd']}", stop)),
                 asyncio.create_task(checker.poll_cluster_queues(kube, [f"{ns}-a", f"{ns}-b"], stop)),
                 asyncio.create_task(finish_admitted(kube, checker, runs, stop))]
        try:
            await create_all(kube, docs[:FIRST_BATCH])
            later = docs[FIRST_BATCH:]
            plan = [(20, "controller"), (60, "controller"), (100, "apiserver"), (140, "controller")]
            started = time.monotonic()
            for threshold, what in plan:
                while len(checker.finished) < threshold:
                    for task in tasks:
                        if task.done():
                            task.result()  # a checker that failed fails the test now
                    assert time.monotonic() - started < 240, f"stalled at {len(checker.finished)} finished"
                    await asyncio.sleep(0.1)
                t0 = time.monotonic()
                if what == "controller":
                    await asyncio.to_thread(kueue.stop, True)  # SIGKILL: no chance to clean up
                    step = sum(1 for w, _ in restarts if w == "controller")
                    await asyncio.to_thread(chaos_while_down, kueue, ns, step)
                    await create_all(kube, later[:20])  # arrivals while no controller runs
                    later = later[20:]
                    await asyncio.to_thread(kueue.start)
                    await asyncio.to_thread(chaos_after_restart, kueue, ns, step)
                else:
                    await asyncio.to_thread(kueue.cluster.restart_apiserver)
                    await create_all(kube, later[:20])
                    later = later[20:]
                restarts.append((what, time.monotonic() - t0))
            await create_all(kube, later)
            while len(checker.finished) < WORKLOADS:
                for task in tasks:
                    if task.done():
                        task.result()
                assert time.monotonic() - started < 300, (
                    f"only {len(checker.finished)} of {WORKLOADS} finished; pending: "
                    f"{sorted(set(checker.objects) - checker.finished)[:10]}")
                await asyncio.sleep(0.2)
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await kube.close()

    began = time.monotonic()
    try:
        asyncio.run(scenario())
    finally:
        if kueue.process is None or kueue.process.poll() is not None:
            kueue.start()  # the session's other tests need a controller
    print(f"\n{WORKLOADS} workloads in {time.monotonic() - began:.1f} s; restarts (s): "
          f"{[(w, round(d, 1)) for w, d in restarts]}; {checker.events} watch events; "
          f"peak cohort cpu {float(checker.peak)}")
    assert not checker.violations, "\n".join(checker.violations[:20])
    assert [w for w, _ in restarts] == ["controller", "controller", "apiserver", "controller"]
    assert checker.finished == {d["metadata"]["name"] for d in docs}
    assert all(checker.reservations[d["metadata"]["name"]] == 1 for d in docs)
    assert checker.peak > 6, "the queues never filled up: the test would not catch an overcommit"
