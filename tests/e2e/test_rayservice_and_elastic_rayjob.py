"""RayService and elastic RayJobs live, with KubeRay's operator (the ``ray`` addon: the RayService
controller is in the same operator) and the controller's webhooks. kwok runs the Pods and no Ray runs
on them, so a RayService never reports Ready (it never serves) and a RayJob in ``InteractiveMode``
waits for a job id forever: both stay running as long as the test needs.

Worked by hand, each in a 4-cpu ClusterQueue with a 1-cpu head and 1-cpu workers:

- a RayService of one worker: suspended in its ``spec.rayClusterConfig`` on create, one Workload of
  ``head`` x1 and ``workers`` x1 (2 cpu), admitted, started; the RayCluster KubeRay makes for it is not
  queued again and its Pods run; a second RayService of 3 workers (4 cpu) waits with no Pod;
- an elastic RayJob with in-tree autoscaling: its first slice (head + 1 worker, 2 cpu) admitted and its
  cluster's worker released from the gate; the cluster scaled to 2 workers as the autoscaler would: a
  new slice of 3 cpu replaces the first (3 cpu held, not 2 + 3); scaled to 4: 5 cpu does not fit, the
  slice waits, the RayJob runs on at 2 and KubeRay's 2 new workers stay at the gate;
- ``simulate`` agrees with the controller on a RayJob's and a RayService's admission (pod sets,
  counts, flavors) in a ClusterQueue of two flavors.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.elastic_objects import gated, reserved_cpu
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, local_queue
from tests.e2e.ray_objects import _cluster_spec

pytestmark = pytest.mark.e2e
QUEUE = {"kueue.x-k8s.io/queue-name": "lq"}


@pytest.fixture
def ray_hooks(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def queues(kueue: Kueue, ns: str) -> None:
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))


def owned_by(kueue: Kueue, ns: str, kind: str) -> list[dict[str, Any]]:
    return [w for w in kueue.items("workloads.kueue.x-k8s.io", ns)
            if any(o.get("kind") == kind for o in w["metadata"].get("ownerReferences") or [])]


def live_pods(kueue: Kueue, ns: str, selector: str) -> list[dict[str, Any]]:
    return [p for p in kueue.items("pods", ns, selector) if not p["metadata"].get("deletionTimestamp")]


# ---- RayService -----------------------------------------------------------------------------------


def rayservice(name: str, ns: str, workers: int) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": name, "namespace": ns, "labels": dict(QUEUE)},
            "spec": {"serveConfigV2": "applications: []", "rayClusterConfig": _cluster_spec("1", "1", workers)}}


def service_cluster(kueue: Kueue, ns: str, service: str) -> dict[str, Any] | None:
    return next((c for c in kueue.items("rayclusters.ray.io", ns)
                 if any(o.get("kind") == "RayService" and o.get("name") == service
                        for o in c["metadata"].get("ownerReferences") or [])), None)


def test_a_rayservice_is_queued_as_one_serving_workload(ray_hooks: Kueue, ns: str) -> None:
    kueue = ray_hooks
    queues(kueue, ns)
    kueue.apply([rayservice("serve", ns, 1)])
    workload = eventually(lambda: next((w for w in owned_by(kueue, ns, "RayService") if is_true(w, "Admitted")), None),
                          90, what="the RayService's Workload admitted")
    assert workload["metadata"]["name"].startswith("rayservice-serve-")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("head", 1), ("workers", 1)]
    eventually(lambda: (kueue.get("rayservice", "serve", ns) or {"spec": {"rayClusterConfig": {}}})["spec"]
               ["rayClusterConfig"].get("suspend") is False, 60, what="the RayService started")
    cluster = eventually(lambda: service_cluster(kueue, ns, "serve"), 90, what="KubeRay's cluster for it")
    name = cluster["metadata"]["name"]
    eventually(lambda: len(live_pods(kueue, ns, f"ray.io/cluster={name}")) == 2, 120, what="its head and worker")
    eventually(lambda: reserved_cpu(kueue, ns) == "2", 60, what="2 cpu reserved")
    # its cluster is the RayService's: no Workload of its own
    assert owned_by(kueue, ns, "RayCluster") == []

    kueue.apply([rayservice("big", ns, 3)])
    waiting = eventually(lambda: next((w for w in owned_by(kueue, ns, "RayService") if w["metadata"]["name"]
                                       .startswith("rayservice-big-") and condition(w, "QuotaReserved")), None),
                         60, what="the second RayService's Workload answered")
    assert not is_true(waiting, "QuotaReserved"), condition(waiting, "QuotaReserved")
    big = service_cluster(kueue, ns, "big")
    assert big is None or live_pods(kueue, ns, f"ray.io/cluster={big['metadata']['name']}") == []
    # suspended by the webhook on create (the first one was admitted too soon to see it), and so it stays
    assert kueue.get("rayservice", "big", ns)["spec"]["rayClusterConfig"]["suspend"] is True  # type: ignore[index]
    # a serving workload never finishes
    assert not is_true(next(w for w in owned_by(kueue, ns, "RayService") if w["metadata"]["uid"]
                            == workload["metadata"]["uid"]), "Finished")


# ---- elastic RayJob -----------------------------------------------------------------------------------


def elastic_rayjob(ns: str) -> dict[str, Any]:
    spec = _cluster_spec("1", "1", 1)
    spec["enableInTreeAutoscaling"] = True
    spec["workerGroupSpecs"][0].update(minReplicas=0, maxReplicas=6)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "grow", "namespace": ns, "labels": dict(QUEUE),
                         "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
            "spec": {"submissionMode": "InteractiveMode", "shutdownAfterJobFinishes": True, "rayClusterSpec": spec}}


def workers_of(w: dict[str, Any]) -> int:
    return next(p["count"] for p in w["spec"]["podSets"] if p["name"] == "workers")


def admitted_with(kueue: Kueue, ns: str, workers: int) -> dict[str, Any] | None:
    return next((w for w in owned_by(kueue, ns, "RayJob") if is_true(w, "Admitted") and not is_true(w, "Finished")
                 and workers_of(w) == workers), None)


def job_cluster(kueue: Kueue, ns: str) -> str:
    return ((kueue.get("rayjob", "grow", ns) or {}).get("status") or {}).get("rayClusterName") or ""


def workers_gated(kueue: Kueue, ns: str) -> tuple[int, int]:
    """(workers, of them gated)"""
    cluster = job_cluster(kueue, ns)
    if not cluster:
        return -1, -1
    pods = [p for p in live_pods(kueue, ns, f"ray.io/cluster={cluster}")
            if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"]
    return len(pods), sum(gated(p) for p in pods)


def scale(kueue: Kueue, ns: str, workers: int) -> None:
    """What the autoscaler writes: the worker group's replicas of the RayJob's cluster."""
    kueue.cluster.kubectl("patch", "raycluster", job_cluster(kueue, ns), "-n", ns, "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": workers}]))


def running(kueue: Kueue, ns: str) -> None:
    obj = kueue.get("rayjob", "grow", ns)
    assert obj is not None and obj["spec"].get("suspend") is not True, obj and obj["spec"]


def test_an_elastic_rayjob_scales_with_its_cluster_through_workload_slices(ray_hooks: Kueue, ns: str) -> None:
    kueue = ray_hooks
    queues(kueue, ns)
    kueue.apply([elastic_rayjob(ns)])
    first = eventually(lambda: admitted_with(kueue, ns, 1), 120, what="the first slice admitted")
    eventually(lambda: workers_gated(kueue, ns) == (1, 0), 120, what="its cluster's worker released from the gate")
    eventually(lambda: reserved_cpu(kueue, ns) == "2", 60, what="2 cpu reserved")

    scale(kueue, ns, 2)
    second = eventually(lambda: admitted_with(kueue, ns, 2), 90, what="the 2-worker slice admitted")
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    old = eventually(lambda: next((w for w in owned_by(kueue, ns, "RayJob") if w["metadata"]["uid"]
                                   == first["metadata"]["uid"] and is_true(w, "Finished")), None),
                     60, what="the first slice finished")
    assert condition(old, "Finished")["reason"] == "WorkloadSliceReplaced"  # type: ignore[index]
    eventually(lambda: reserved_cpu(kueue, ns) == "3", 60, what="3 cpu reserved, not 2 + 3")
    eventually(lambda: workers_gated(kueue, ns) == (2, 0), 90, what="the second worker released")
    running(kueue, ns)

    scale(kueue, ns, 4)
    waiting = eventually(lambda: next((w for w in owned_by(kueue, ns, "RayJob") if workers_of(w) == 4
                                       and condition(w, "QuotaReserved") is not None), None),
                         60, what="the 4-worker slice answered")
    assert not is_true(waiting, "QuotaReserved"), condition(waiting, "QuotaReserved")
    eventually(lambda: workers_gated(kueue, ns) == (4, 2), 90, what="KubeRay's 2 new workers held at the gate")
    assert admitted_with(kueue, ns, 2) is not None and reserved_cpu(kueue, ns) == "3"
    running(kueue, ns)


# ---- simulate agrees --------------------------------------------------------------------------------

SIMULATED = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations: {frameworks: ["batch/job", "ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice"]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: sim-ray-small}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: sim-ray-big}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - {name: sim-ray-small, resources: [{name: cpu, nominalQuota: 2}]}
    - {name: sim-ray-big, resources: [{name: cpu, nominalQuota: 8}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: job
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  submissionMode: InteractiveMode
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray:2.9.0, resources: {requests: {cpu: "1"}}}]
    workerGroupSpecs:
    - groupName: workers
      replicas: 2
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-worker, image: rayproject/ray:2.9.0, resources: {requests: {cpu: "1"}}}]
---
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: serve
  labels: {kueue.x-k8s.io/queue-name: lq}
  annotations: {pykueue.dev/arrival: 5s}
spec:
  serveConfigV2: "applications: []"
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray:2.9.0, resources: {requests: {cpu: "1"}}}]
    workerGroupSpecs:
    - groupName: workers
      replicas: 3
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-worker, image: rayproject/ray:2.9.0, resources: {requests: {cpu: "1"}}}]
"""


def test_simulate_predicts_a_rayjobs_and_a_rayservices_admission(ray_hooks: Kueue, ns: str, tmp_path) -> None:
    """SIMULATED through `simulate`, then live in this namespace (its ClusterQueue named after the test),
    the RayJob first and the RayService once the RayJob is admitted, as the RayService's arrival at 5 s
    has it. Worked by hand, which simulate must agree with: small holds 2 cpu, big 8, tried in that
    order. The RayJob's head takes 1 cpu of small, its 2 workers do not fit the 1 left there and go to
    big; the RayService's head takes small's last cpu, its 3 workers go to big. Live, each Workload is
    admitted with the pod sets, counts and flavors simulate predicted."""
    from tests.e2e.objects import scenario_in_namespace
    from tests.scenario_harness import simulate

    code, predicted, err = simulate(SIMULATED, tmp_path)
    assert code == 0 and predicted is not None, err
    expected = {w["kind"]: w["admission"]["podSetAssignments"] for w in predicted["workloads"]}
    small, big = {"cpu": "sim-ray-small"}, {"cpu": "sim-ray-big"}
    assert expected == {
        "RayJob": [{"name": "head", "count": 1, "flavors": small}, {"name": "workers", "count": 2, "flavors": big}],
        "RayService": [{"name": "head", "count": 1, "flavors": small},
                       {"name": "workers", "count": 3, "flavors": big}]}
    docs = scenario_in_namespace(SIMULATED, ns)
    kueue = ray_hooks

    def admitted(kind: str) -> list[dict[str, Any]] | None:
        wl = next((w for w in owned_by(kueue, ns, kind) if is_true(w, "Admitted")), None)
        return None if wl is None else [{"name": a["name"], "count": a["count"], "flavors": a["flavors"]}
                                        for a in wl["status"]["admission"]["podSetAssignments"]]

    kueue.apply([d for d in docs if d["kind"] != "RayService"])
    assert eventually(lambda: admitted("RayJob"), 120, what="the RayJob's Workload admitted") == expected["RayJob"]
    kueue.apply([d for d in docs if d["kind"] == "RayService"])
    assert eventually(lambda: admitted("RayService"), 120,
                      what="the RayService's Workload admitted") == expected["RayService"]
