"""MultiKueue for LeaderWorkerSets (issue 42 item 3's last kind), on real API servers: a tier 1 manager
(the LWS CRD only, no LWS controller) and two tier 2 workers running LWS's controller (the ``lws`` addon),
every controller serving its webhooks.

As upstream's leaderworkerset_multikueue_adapter.go: each group's Workload carries job-owner-gvk,
job-owner-name and component-workload-index; group 0 nominates the workers and group 1 follows it to the
worker it was admitted on; the LWS is created there with the origin label and the manager's UID
(``kueue.x-k8s.io/multikueue-origin-uid``) and no prebuilt label, so that worker's reconciler names its
groups' Workloads after the manager's (the copies) and makes none. Nothing comes back.

Once the manager's LWS is deleted the worker ends with nothing of it: no Pod (terminating ones
included), no StatefulSet and no Workload. The worker's leader Pods, deleted with its LWS while they
run, lose Kueue's ``kueue.x-k8s.io/managed`` finalizer (their group's Workload is being deleted, and
the LWS Pod rule finalizes a deleted Pod even once its LWS is gone), so the worker StatefulSets they own
are collected too.

Sampled throughout, every 0.3 s on both workers (test_multikueue_faults' sampler): a group's active pods
(by their prebuilt-workload label) are in at most one worker, and no worker ClusterQueue exceeds its quota."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import eventually, is_true
from tests.e2e.multikueue_setup import Clusters
from tests.e2e.test_multikueue import NS
from tests.e2e.test_multikueue_faults import Invariants, holding, sampling
from tests.e2e.test_multikueue_kinds import ORIGIN, ORIGIN_LABEL, PREBUILT, check_state
from tests.e2e.test_multikueue_serving import pods_on

pytestmark = pytest.mark.e2e
ORIGIN_UID = "kueue.x-k8s.io/multikueue-origin-uid"
INDEX = "kueue.x-k8s.io/component-workload-index"


@pytest.fixture(scope="module")
def clusters(multikueue_clusters: Clusters) -> Clusters:
    """The session's manager and workers (``multikueue_setup.SHARED``)."""
    return multikueue_clusters


@pytest.fixture(scope="module")
def one_worker(clusters: Clusters) -> Iterator[Invariants]:
    yield from sampling(clusters.workers, key=PREBUILT)


@pytest.fixture(autouse=True)
def held_throughout(one_worker: Invariants) -> Iterator[None]:
    yield from holding(one_worker)


def leaderworkerset(name: str) -> dict[str, Any]:
    """Two groups of a leader and a worker, 1 CPU each: 4 CPUs, the worker ClusterQueue's whole quota."""
    def template(role: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": role, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}

    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {
                "size": 2, "leaderTemplate": template("leader"), "workerTemplate": template("worker")}}}


def groups(clusters: Clusters, name: str) -> list[dict[str, Any]]:
    """The manager's Workloads of LWS ``name``, by group index."""
    found = [w for w in clusters.manager.items("workloads.kueue.x-k8s.io", NS)
             if (w["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/job-owner-name") == name]
    return sorted(found, key=lambda w: int(w["metadata"]["annotations"][INDEX]))


def test_a_leaderworkerset_runs_all_its_groups_on_one_worker(clusters: Clusters, one_worker: Invariants) -> None:
    manager = clusters.manager
    manager.apply([leaderworkerset("srv")])
    local = manager.get("leaderworkerset.leaderworkerset.x-k8s.io", "srv", NS)
    assert local is not None
    both = eventually(lambda: len(ws := groups(clusters, "srv")) == 2 and all(is_true(w, "Admitted") for w in ws)
                      and ws, 180, what="both groups' Workloads admitted on the manager")
    chosen = {w["status"]["clusterName"] for w in both}
    assert len(chosen) == 1 and chosen <= set(clusters.workers)
    worker_name = chosen.pop()
    assert [check_state(w)["state"] for w in both] == ["Ready", "Ready"]
    worker = clusters.workers[worker_name]
    remote = eventually(lambda: worker.get("leaderworkerset.leaderworkerset.x-k8s.io", "srv", NS), 90,
                        what="the remote LeaderWorkerSet")
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == ORIGIN
    assert PREBUILT not in remote["metadata"]["labels"]
    assert remote["metadata"]["annotations"][ORIGIN_UID] == local["metadata"]["uid"]
    names = [w["metadata"]["name"] for w in both]
    # the worker makes none of its own: its Workloads are the two copies, and its Pods join them
    running = eventually(lambda: len(ps := [p for p in pods_on(worker, "leaderworkerset.sigs.k8s.io/name=srv")
                                            if p["status"].get("phase") == "Running"]) == 4 and ps, 240,
                         what="four Pods Running on the worker")
    assert sorted(w["metadata"]["name"] for w in worker.items("workloads.kueue.x-k8s.io", NS)) == sorted(names)
    assert {p["metadata"]["labels"][PREBUILT] for p in running} == set(names)
    other = clusters.workers[next(w for w in clusters.workers if w != worker_name)]
    eventually(lambda: not other.items("workloads.kueue.x-k8s.io", NS), 60, what="no copy left on the other worker")
    assert other.get("leaderworkerset.leaderworkerset.x-k8s.io", "srv", NS) is None
    eventually(lambda: all(one_worker.seen.get(n) == {worker_name} for n in names), 30,
               what="the sampler seeing both groups' pods on that worker")
    # deleted on the manager, its Workloads as the garbage collector would take them (none on tier 1)
    manager.cluster.kubectl("delete", "leaderworkerset.leaderworkerset.x-k8s.io", "srv", "-n", NS)
    manager.cluster.kubectl("delete", "workload", *names, "-n", NS, "--wait=false")
    eventually(lambda: worker.get("leaderworkerset.leaderworkerset.x-k8s.io", "srv", NS) is None
               and not worker.items("workloads.kueue.x-k8s.io", NS), 120, what="the remote LWS and copies deleted")
    # the leader StatefulSet goes with the LWS (LWS's controller and the garbage collector on the worker),
    # its leader Pods lose Kueue's finalizer and go, and with them the worker StatefulSets they own
    left: dict[str, list[str]] = {}

    def nothing_left() -> bool:
        left.clear()
        for kind in ("pods", "statefulsets"):
            out = worker.cluster.kubectl("get", kind, "-n", NS, "-l", "leaderworkerset.sigs.k8s.io/name=srv",
                                         "-o", "json").stdout
            if names_left := sorted(o["metadata"]["name"] for o in json.loads(out)["items"]):
                left[kind] = names_left
        if workloads := sorted(w["metadata"]["name"] for w in worker.items("workloads.kueue.x-k8s.io", NS)):
            left["workloads"] = workloads
        return not left

    try:
        eventually(nothing_left, 180, interval=1.0, what="nothing of the LWS left on the worker")
    except AssertionError:
        raise AssertionError(f"3 minutes after the LWS was deleted, still on the worker: {left}") from None
