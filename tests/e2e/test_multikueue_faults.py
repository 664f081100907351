"""MultiKueue's faults on real API servers (issue 42 item 4): one manager (tier 1) and two tier-2
workers, started once for the module by ``test_multikueue``'s fixture. Every test runs under the two
invariants, sampled on both workers every 0.3 s for the whole module: a job's pods are active in at
most one worker at any moment, and no worker's ClusterQueue holds more than its quota (its reservation,
and the CPU its active pods request).

- the manager's controller killed with SIGKILL after dispatch, both workers admitting their copies
  while it is down, then restarted: one copy wins, the other goes, the job runs in exactly one worker;
- the worker running a job removed from the MultiKueueConfig: given up at once (upstream's "Reserving
  remote no longer exists or is not admitted", not the worker-lost wait), its objects there deleted, and
  the job runs on the other worker;
- the running worker's kubeconfig Secret rotated: the manager reconnects and the job keeps running
  where it is, never evicted;
- the Incremental dispatcher, live: the first round nominates both workers.

Jobs here are created without ``spec.managedBy``: the Job webhook defaults it (their queue's
ClusterQueue has the MultiKueue check)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster.rest import RestError
from tests.e2e import test_multikueue as base
from tests.e2e.conftest import Kueue, eventually, is_true

NS = base.NS
QUOTA_CPU = 4.0  # each worker ClusterQueue's nominalQuota (base.cluster_queue)
MK = "kueue.x-k8s.io/multikueue"

clusters = base.clusters  # the module's manager and workers (one set for this module)


def _cpu(quantity: str | int | float) -> float:
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


class Invariants:
    """The module-wide sampler: every violation seen, and the workers each job's pods were active in (a
    job named by its pods' ``key`` label: a Job's name, or the prebuilt Workload's for other kinds)."""

    def __init__(self, workers: dict[str, Kueue], key: str = "batch.kubernetes.io/job-name") -> None:
        self.workers = workers
        self.key = key
        self.violations: list[str] = []
        self.seen: dict[str, set[str]] = {}
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        where: dict[str, set[str]] = {}
        for name, kueue in self.workers.items():
            try:
                pods = kueue.items("pods", NS)
            except RestError:
                pods = []  # unreachable: nothing visible
            active = [p for p in pods if p["status"].get("phase") in ("Pending", "Running")
                      and not p["metadata"].get("deletionTimestamp")]
            cpu = sum(_cpu(c["resources"].get("requests", {}).get("cpu", 0))
                      for p in active for c in p["spec"]["containers"])
            if cpu > QUOTA_CPU:
                self.violations.append(f"{name}: active pods request {cpu} cpu > {QUOTA_CPU}")
            for p in active:
                job = (p["metadata"].get("labels") or {}).get(self.key, "?")
                where.setdefault(job, set()).add(name)
            cq = kueue.get("clusterqueue", "cq") or {}
            for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
                for res in flavor.get("resources") or []:
                    if res["name"] == "cpu" and _cpu(res["total"]) > QUOTA_CPU:
                        self.violations.append(f"{name}: ClusterQueue cq reserves {res['total']} cpu")
        for job, names in where.items():
            self.seen.setdefault(job, set()).update(names)
            if len(names) > 1:
                self.violations.append(f"job {job} active in {sorted(names)} at once")
        self.samples += 1

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(0.3)


def sampling(workers: dict[str, Kueue], key: str = "batch.kubernetes.io/job-name") -> Iterator[Invariants]:
    """A module's sampler, from its first test to its last (a module fixture's body)."""
    sampler = Invariants(workers, key)
    yield sampler
    sampler.stop.set()
    sampler.thread.join(timeout=30)


def holding(invariants: Invariants) -> Iterator[None]:
    """No violation sampled while one test ran (an autouse fixture's body)."""
    before = len(invariants.violations)
    yield
    assert invariants.violations[before:] == [], "invariant broken"


@pytest.fixture(scope="module")
def invariants(clusters: base.Clusters) -> Iterator[Invariants]:
    yield from sampling(clusters.workers)


@pytest.fixture(autouse=True)
def held_throughout(invariants: Invariants) -> Iterator[None]:
    yield from holding(invariants)


def job(name: str, run: str) -> str:
    """A Job for the MultiKueue queue, with no managedBy: the webhook sets it."""
    return base.job(name, run=run, managed=False)


def hold(kueue: Kueue, held: bool) -> None:
    kueue.cluster.kubectl("patch", "clusterqueue", "cq", "--type=merge", "-p",
                          json.dumps({"spec": {"stopPolicy": "Hold" if held else None}}))


def manager_config(clusters: base.Clusters) -> Path:
    return clusters.manager.log.parent / "manager-config.yaml"


def admitted_on(manager: Kueue, name: str, timeout: float = 120) -> tuple[dict[str, Any], str]:
    wl = eventually(lambda: (w := base.workload_of(manager, name)) and is_true(w, "Admitted")
                    and w["status"].get("clusterName") and w, timeout, what=f"{name} admitted through a worker")
    return wl, wl["status"]["clusterName"]


def completes(clusters: base.Clusters, name: str, timeout: float = 180) -> None:
    manager = clusters.manager
    eventually(lambda: is_true(manager.get("job", name, NS), "Complete"), timeout, what=f"{name} Complete")
    eventually(lambda: is_true(base.workload_of(manager, name), "Finished"), 60, what=f"{name} Finished")
    eventually(lambda: all(k.get("job", name, NS) is None for k in clusters.workers.values()), 60,
               what=f"{name}: the remote Jobs deleted")


def log_lines(kueue: Kueue, needle: str) -> list[str]:
    return [line for line in kueue.log.read_text(errors="replace").splitlines() if needle in line]


def test_the_manager_killed_between_dispatch_and_admission(clusters: base.Clusters, invariants: Invariants) -> None:
    manager, workers = clusters.manager, clusters.workers
    eventually(lambda: all(is_true(manager.get("multikueuecluster", w), "Active") for w in workers), 60,
               what="both workers Active")
    for kueue in workers.values():
        hold(kueue, True)
    try:
        manager.apply(job("crash", run="4s"))
        assert manager.get("job", "crash", NS)["spec"]["managedBy"] == MK  # the webhook's default
        wl = eventually(lambda: (w := base.workload_of(manager, "crash")) and is_true(w, "QuotaReserved") and w, 60,
                        what="quota reserved on the manager")
        name = wl["metadata"]["name"]
        eventually(lambda: all(k.get("workload", name, NS) for k in workers.values()), 60,
                   what="a copy dispatched to each worker")
        manager.stop(kill=True)
    finally:
        for kueue in workers.values():
            hold(kueue, False)
    # with the manager down, both workers admit their copy; no Job exists on either, so nothing runs
    eventually(lambda: all(is_true(k.get("workload", name, NS), "Admitted") for k in workers.values()), 60,
               what="both copies admitted while the manager is down")
    assert all(k.get("job", "crash", NS) is None for k in workers.values())
    base.start(manager, manager_config(clusters))
    _, chosen = admitted_on(manager, "crash")
    other = next(w for w in workers if w != chosen)
    eventually(lambda: workers[other].get("workload", name, NS) is None, 60, what=f"the copy in {other} removed")
    completes(clusters, "crash")
    assert invariants.seen.get("crash") == {chosen}
    assert workers[other].get("job", "crash", NS) is None


def test_a_worker_removed_from_the_config_while_it_runs_a_job(clusters: base.Clusters,
                                                              invariants: Invariants) -> None:
    manager, workers = clusters.manager, clusters.workers
    manager.apply(job("moved", run="40s"))
    wl, removed = admitted_on(manager, "moved")
    kept = next(w for w in workers if w != removed)
    eventually(lambda: invariants.seen.get("moved") == {removed}, 60, what=f"moved running in {removed}")
    manager.cluster.kubectl("patch", "multikueueconfig", "mkc", "--type=merge", "-p",
                            json.dumps({"spec": {"clusters": [kept]}}))
    try:
        eventually(lambda: workers[removed].get("job", "moved", NS) is None
                   and workers[removed].get("workload", wl["metadata"]["name"], NS) is None, 60,
                   what=f"the job's objects in {removed} deleted")
        eventually(lambda: (w := base.workload_of(manager, "moved")) and is_true(w, "Admitted")
                   and w["status"].get("clusterName") == kept, 120, what=f"moved admitted again, through {kept}")
        eventually(lambda: kept in invariants.seen.get("moved", set()), 60, what=f"moved running in {kept}")
        # given up at once, as upstream does for a cluster that left the config, not after workerLostTimeout
        assert log_lines(manager, "Reserving remote no longer exists"), \
            "the check was not set to Retry for the removed cluster"
        assert not [line for line in log_lines(manager, "Reserving remote lost") if wl["metadata"]["name"] in line]
    finally:
        manager.cluster.kubectl("patch", "multikueueconfig", "mkc", "--type=merge", "-p",
                                json.dumps({"spec": {"clusters": ["w1", "w2"]}}))
    completes(clusters, "moved")


def test_the_kubeconfig_secret_rotated_while_a_job_runs(clusters: base.Clusters, invariants: Invariants) -> None:
    manager, workers = clusters.manager, clusters.workers
    manager.apply(job("rotated", run="30s"))
    wl, running = admitted_on(manager, "rotated")
    eventually(lambda: invariants.seen.get("rotated") == {running}, 60, what=f"rotated running in {running}")
    # a new Secret for the same worker: the same credentials under new names (its bytes differ, so the
    # manager drops its connection and connects afresh)
    doc = yaml.safe_load(base.flattened(workers[running].cluster))
    doc["clusters"][0]["name"] = doc["contexts"][0]["context"]["cluster"] = "rotated-cluster"
    doc["users"][0]["name"] = doc["contexts"][0]["context"]["user"] = "rotated-user"
    doc["contexts"][0]["name"] = doc["current-context"] = "rotated"
    secret = "w1-secret" if running == "w1" else "w2-secret"
    manager.apply([base.secret(secret, yaml.safe_dump(doc))])
    completes(clusters, "rotated")
    assert invariants.seen.get("rotated") == {running}
    done = base.workload_of(manager, "rotated")
    assert done["status"].get("clusterName") == running
    assert not [c for c in done["status"].get("conditions") or [] if c["type"] == "Evicted"], "evicted by the rotation"
    assert is_true(manager.get("multikueuecluster", running), "Active")


def test_the_incremental_dispatcher_nominates_both_workers_in_its_first_round(
        clusters: base.Clusters, invariants: Invariants, tmp_path: Path) -> None:
    manager, workers = clusters.manager, clusters.workers
    config = tmp_path / "incremental.yaml"
    config.write_text(yaml.safe_dump({**base.MANAGER_CONFIG, "multiKueue": {
        **base.MANAGER_CONFIG["multiKueue"], "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}}))
    manager.stop()
    base.start(manager, config)
    try:
        for kueue in workers.values():
            hold(kueue, True)
        try:
            manager.apply(job("incremental", run="8s"))
            wl = eventually(lambda: (w := base.workload_of(manager, "incremental"))
                            and (w.get("status") or {}).get("nominatedClusterNames") and w, 60, what="nominated")
            assert wl["status"]["nominatedClusterNames"] == ["w1", "w2"]  # up to 3 a round, in name order
            name = wl["metadata"]["name"]
            eventually(lambda: all(k.get("workload", name, NS) for k in workers.values()), 60,
                       what="a copy in each nominated worker")
        finally:
            for kueue in workers.values():
                hold(kueue, False)
        _, chosen = admitted_on(manager, "incremental")
        eventually(lambda: invariants.seen.get("incremental") == {chosen}, 60, what=f"running in {chosen}")
        completes(clusters, "incremental")
        assert invariants.seen.get("incremental") == {chosen}
    finally:
        manager.stop()
        base.start(manager, manager_config(clusters))
