"""RayCluster and RayJob live, on the tier-2 cluster with KubeRay's real operator (the ``ray`` addon,
built from its Go module): Kueue suspends them on create, admission starts them on the flavor's nodes,
KubeRay makes the head and worker Pods, kwok runs them.

The module starts the addon on the session's cluster and, as the pod integration's module does, stops
the session's controller and runs its own with the Ray integrations and its webhooks on; afterwards
the operator stops and the session's controller runs again. No Ray runs on kwok's fake nodes, so a
RayJob's submitter Job completes (kwok completes a Job's Pods) without any Ray job behind it: KubeRay
then fails the RayJob once its grace period (30 s) is over, and its Workload finishes Failed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.controller.webhooks import local, names
from pykueue.devcluster import kuberay
from tests.e2e.conftest import INTEGRATIONS_CONFIG, Kueue, condition, eventually, is_true
from tests.e2e.objects import (
    GPU_FLAVOR,
    as_created,
    cluster_queue,
    gpu_queue,
    local_queue,
    priority_classes,
    scenario_in_namespace,
    workload_for,
)
from tests.e2e.ray_objects import raycluster, rayjob
from tests.e2e.running import Sampler

pytestmark = pytest.mark.e2e
GPU_NODE = "gpu-h100-0"
GPU_SELECTOR = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


@pytest.fixture
def ray_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def ray_pods(kueue: Kueue, ns: str, cluster: str) -> list[dict[str, Any]]:
    return kueue.items("pods", ns, f"ray.io/cluster={cluster}")


def running_on_gpu(kueue: Kueue, ns: str, cluster: str, count: int) -> list[dict[str, Any]] | None:
    """The cluster's Pods when ``count`` of them run on the H100 node."""
    found = [p for p in ray_pods(kueue, ns, cluster) if not p["metadata"].get("deletionTimestamp")]
    running = [p for p in found if p["spec"].get("nodeName") == GPU_NODE
               and (p.get("status") or {}).get("phase") == "Running"]
    return found if len(running) == count == len(found) else None


def test_raycluster_admitted_runs_on_its_flavor_and_one_over_quota_waits(ray_kueue: Kueue, ns: str) -> None:
    """3 cpu on the H100 flavor. A RayCluster of a 1 cpu head and two 1 cpu workers is created
    suspended, admitted, started with the flavor's node selector and toleration in both templates;
    KubeRay makes its head and two workers, which run on the H100 node, and once KubeRay reports the
    cluster ready its Workload is PodsReady. A second one (2 cpu) stays suspended, without Pods, with
    its Workload's message."""
    gpu_queue(ray_kueue, ns, "3")
    assert as_created(ray_kueue, raycluster("first", ns, workers=2))["spec"]["suspend"] is True  # the webhook's
    ray_kueue.apply([raycluster("first", ns, workers=2)])
    pods = eventually(lambda: running_on_gpu(ray_kueue, ns, "first", 3), 120, what="head and 2 workers on the H100 node")
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    for p in pods:
        assert p["spec"]["nodeSelector"] == GPU_SELECTOR
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]
    wl = workload_for(ray_kueue, ns, "RayCluster", "first")
    assert wl is not None and wl["metadata"]["name"].startswith("raycluster-first-")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("head", 1), ("workers", 2)]
    eventually(lambda: is_true(workload_for(ray_kueue, ns, "RayCluster", "first"), "PodsReady"), 90,
               what="PodsReady from the cluster's ready state")
    assert condition(workload_for(ray_kueue, ns, "RayCluster", "first"), "PodsReady")["reason"] == "Started"

    ray_kueue.apply([raycluster("second", ns, workers=1)])
    message = eventually(lambda: (c := condition(workload_for(ray_kueue, ns, "RayCluster", "second"),
                                                 "QuotaReserved")) and c["status"] == "False" and c["message"],
                         60, what="second's pending message")
    assert "insufficient unused quota for cpu in flavor gpu-h100, 2 more needed" in message
    assert ray_kueue.get("raycluster.ray.io", "second", ns)["spec"]["suspend"] is True
    assert ray_pods(ray_kueue, ns, "second") == []


def test_preempted_raycluster_is_suspended_restored_and_its_pods_go(ray_kueue: Kueue, ns: str) -> None:
    """Priority preemption in a 2 cpu queue: the low RayCluster (head + worker) runs; the high one
    evicts it: low is suspended again with its templates as created (no flavor selector), KubeRay
    deletes its Pods, and high's Pods run on the H100 node."""
    ray_kueue.apply(priority_classes(ns))
    gpu_queue(ray_kueue, ns, "2", preemption="{withinClusterQueue: LowerPriority}")
    ray_kueue.apply([raycluster("low", ns, priority_class=f"{ns}-low")])
    eventually(lambda: running_on_gpu(ray_kueue, ns, "low", 2), 120, what="low running")
    ray_kueue.apply([raycluster("high", ns, priority_class=f"{ns}-high")])
    eventually(lambda: running_on_gpu(ray_kueue, ns, "high", 2), 120, what="high running")
    low = eventually(lambda: (o := ray_kueue.get("raycluster.ray.io", "low", ns)) and o["spec"].get("suspend") and o,
                     60, what="low suspended")
    assert "nodeSelector" not in low["spec"]["headGroupSpec"]["template"]["spec"]
    assert "nodeSelector" not in low["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    eventually(lambda: ray_pods(ray_kueue, ns, "low") == [], 90, what="low's pods deleted by KubeRay")
    assert not is_true(workload_for(ray_kueue, ns, "RayCluster", "low"), "Admitted")
    events = json.loads(ray_kueue.cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    assert any(e.get("reason") == "Preempted" and e["involvedObject"]["name"].startswith("raycluster-low-")
               for e in events)


def test_rayjob_admitted_runs_its_cluster_and_finishes(ray_kueue: Kueue, ns: str) -> None:
    """A RayJob (head, worker, submitter: 3 cpu) in a 3 cpu queue: created suspended, admitted, KubeRay
    makes its RayCluster (owned by the RayJob, so neither suspended nor queued on its own) whose head
    and worker run on the H100 node, then the submitter Job; with no Ray behind it KubeRay fails the
    RayJob after its grace period, and the Workload finishes Failed with KubeRay's message."""
    gpu_queue(ray_kueue, ns, "3")
    assert as_created(ray_kueue, rayjob("job", ns))["spec"]["suspend"] is True
    ray_kueue.apply([rayjob("job", ns)])
    wl = eventually(lambda: workload_for(ray_kueue, ns, "RayJob", "job"), 60, what="the RayJob's workload")
    assert [p["name"] for p in wl["spec"]["podSets"]] == ["head", "workers", "submitter"]
    def cluster_name() -> str | None:
        return ((ray_kueue.get("rayjob.ray.io", "job", ns) or {}).get("status") or {}).get("rayClusterName")

    eventually(cluster_name, 90, what="KubeRay's cluster for the job")
    # read again at each poll: KubeRay names a cluster while the RayJob is still suspended and names
    # another once it is resumed, so the first name seen may be one that never gets Pods
    pods = eventually(lambda: (name := cluster_name()) and running_on_gpu(ray_kueue, ns, name, 2), 240,
                      what="the job's head and worker running")
    name = pods[0]["metadata"]["labels"]["ray.io/cluster"]
    assert all(p["spec"]["nodeSelector"] == GPU_SELECTOR for p in pods)
    assert workload_for(ray_kueue, ns, "RayCluster", name) is None  # the RayJob's Workload stands for it
    own = ray_kueue.get("raycluster.ray.io", name, ns)
    assert own is not None and not own["spec"].get("suspend")
    finished = eventually(lambda: (w := workload_for(ray_kueue, ns, "RayJob", "job")) and is_true(w, "Finished") and w,
                          150, what="the RayJob's workload finished")
    cond = condition(finished, "Finished")
    assert condition(finished, "PodsReady") is not None  # finishing keeps what the job side wrote before
    job = ray_kueue.get("rayjob.ray.io", "job", ns)
    assert job["status"]["jobDeploymentStatus"] == "Failed"
    assert cond["reason"] == "Failed" and cond["message"] == job["status"]["message"]


def test_ray_hooks_registered_for_the_configured_frameworks(ray_kueue: Kueue) -> None:
    """The controller registered a suspend-on-create hook for each Ray kind it queues (names.mutating_for)."""
    mutating, _ = names.configuration_names(names.SERVICE)
    config = ray_kueue.get("mutatingwebhookconfiguration", mutating)
    assert config is not None and local.is_ours(config)
    assert [w["name"] for w in config["webhooks"]] == [h.name for h in names.mutating_for(
        tuple(INTEGRATIONS_CONFIG["integrations"]["frameworks"]))]
    ray = [w["name"] for w in config["webhooks"] if w["name"].startswith("mray")]
    assert ray == ["mrayjob.kb.io", "mraycluster.kb.io", "mrayservice.kb.io"]  # the registry's order


def test_simulate_predicts_a_rayclusters_admission(ray_kueue: Kueue, ns: str, tmp_path) -> None:
    """tests/scenarios/integration_raycluster.yaml through `simulate`, then live (its ClusterQueue named
    after this test, in its namespace): the RayCluster's Workload is admitted with the pod sets, counts
    and flavors simulate predicted (head on small, the four workers on big)."""
    from tests.scenario_harness import SCENARIOS, simulate, split

    _, text = split(SCENARIOS / "integration_raycluster.yaml")
    code, predicted, err = simulate(text, tmp_path)
    assert code == 0 and predicted is not None, err
    (expected,) = [w for w in predicted["workloads"] if w["kind"] == "RayCluster"]
    docs = scenario_in_namespace(text, ns)
    ray_kueue.apply(docs)

    def admitted() -> dict[str, Any] | None:
        for wl in ray_kueue.items("workloads.kueue.x-k8s.io", ns):
            if is_true(wl, "Admitted"):
                return wl
        return None

    wl = eventually(admitted, 120, what="the RayCluster's workload admitted")
    got = [{"name": a["name"], "count": a["count"], "flavors": a["flavors"]}
           for a in wl["status"]["admission"]["podSetAssignments"]]
    assert got == expected["admission"]["podSetAssignments"]


def test_an_evicted_rayclusters_quota_is_held_until_kuberay_has_stopped_it(ray_kueue: Kueue, ns: str) -> None:
    """Issue 37 for Ray: priority preemption in a 2 cpu queue while KubeRay's operator is frozen
    (SIGSTOP). Kueue evicts and suspends the low RayCluster at once, but KubeRay has not deleted its
    Pods nor reported it suspended, so low keeps its quota and high waits: what runs (counted from the
    Pods) never passes 2 cpu. Once KubeRay runs again it stops low, low's quota goes and high runs."""
    ray_kueue.apply(priority_classes(ns))
    gpu_queue(ray_kueue, ns, "2", preemption="{withinClusterQueue: LowerPriority}")
    ray_kueue.apply([raycluster("low", ns, priority_class=f"{ns}-low")])
    eventually(lambda: running_on_gpu(ray_kueue, ns, "low", 2), 120, what="low running")
    eventually(lambda: (((ray_kueue.get("raycluster.ray.io", "low", ns) or {}).get("status") or {}).get("state")
                        == "ready"), 90, what="KubeRay reports low ready")
    sampler = Sampler(ray_kueue, ns)
    with ray_kueue.cluster.paused(kuberay.BINARY):
        ray_kueue.apply([raycluster("high", ns, priority_class=f"{ns}-high")])

        def low_evicted_and_suspended() -> bool:
            sampler.sample()
            victim, low = workload_for(ray_kueue, ns, "RayCluster", "low"), ray_kueue.get("raycluster.ray.io", "low", ns)
            waiting = condition(workload_for(ray_kueue, ns, "RayCluster", "high"), "QuotaReserved") or {}
            return bool(is_true(victim, "Evicted") and low and low["spec"].get("suspend")
                        and "Pending the preemption of 1 workload(s)" in waiting.get("message", ""))

        eventually(low_evicted_and_suspended, 60, what="low evicted and suspended, high waiting for it")
        victim = workload_for(ray_kueue, ns, "RayCluster", "low")
        assert is_true(victim, "QuotaReserved") and victim["status"]["admission"]["clusterQueue"] == ns
        assert len(ray_pods(ray_kueue, ns, "low")) == 2  # KubeRay has not stopped it
        assert ray_pods(ray_kueue, ns, "high") == []
        assert sampler.sample() == 2000
    eventually(lambda: sampler.sample() is not None and running_on_gpu(ray_kueue, ns, "high", 2), 120,
               what="high running once KubeRay stopped low")
    eventually(lambda: not is_true(workload_for(ray_kueue, ns, "RayCluster", "low"), "QuotaReserved"), 30,
               what="low released")
    assert ray_pods(ray_kueue, ns, "low") == []
    assert sampler.peak <= 2000, f"ran {sampler.peak} milli-cpu on a 2 cpu queue"


def test_a_rayjob_kuberay_finds_invalid_finishes_and_gives_its_quota_back(ray_kueue: Kueue, ns: str) -> None:
    """A RayJob Kueue accepts but KubeRay refuses (its runtimeEnvYAML is not YAML) is admitted while
    KubeRay is frozen, so it holds the 3 cpu queue. When KubeRay runs again it marks the RayJob
    ValidationFailed: its Workload finishes Failed with KubeRay's message, and the quota goes to a
    RayCluster waiting behind it."""
    gpu_queue(ray_kueue, ns, "3")
    invalid = rayjob("invalid", ns)
    invalid["spec"]["runtimeEnvYAML"] = "pip: ["
    with ray_kueue.cluster.paused(kuberay.BINARY):
        ray_kueue.apply([invalid])
        eventually(lambda: (o := ray_kueue.get("rayjob.ray.io", "invalid", ns)) and o["spec"].get("suspend") is False,
                   60, what="the RayJob admitted and started")
        ray_kueue.apply([raycluster("next", ns, workers=1)])
        eventually(lambda: (c := condition(workload_for(ray_kueue, ns, "RayCluster", "next"), "QuotaReserved"))
                   and c["status"] == "False", 60, what="next waiting for quota")
    finished = eventually(lambda: (w := workload_for(ray_kueue, ns, "RayJob", "invalid")) and is_true(w, "Finished")
                          and w, 90, what="the invalid RayJob's workload finished")
    job = ray_kueue.get("rayjob.ray.io", "invalid", ns)
    assert job["status"]["jobDeploymentStatus"] == "ValidationFailed"
    cond = condition(finished, "Finished")
    assert cond["reason"] == "Failed" and cond["message"] == job["status"]["message"]
    eventually(lambda: running_on_gpu(ray_kueue, ns, "next", 2), 120, what="next running on the freed quota")


def test_the_default_submitter_runs_on_its_flavor(ray_kueue: Kueue, ns: str) -> None:
    """A RayJob with KubeRay's default submitter (500m cpu, 200Mi) in a queue covering cpu and memory
    on the H100 flavor: Kueue writes the default submitter template out with the flavor's node selector
    and toleration, so KubeRay's submitter Job and its Pod carry them too."""
    ray_kueue.apply(GPU_FLAVOR)
    ray_kueue.apply(cluster_queue(ns, "3", flavor="gpu-h100", memory="1Gi"))
    ray_kueue.apply(local_queue(ns, ns))
    job = rayjob("defaulted", ns)
    del job["spec"]["submitterPodTemplate"]
    ray_kueue.apply([job])
    wl = eventually(lambda: (w := workload_for(ray_kueue, ns, "RayJob", "defaulted")) and is_true(w, "Admitted") and w,
                    60, what="the RayJob admitted")
    assert [(a["name"], a["flavors"]) for a in wl["status"]["admission"]["podSetAssignments"]][-1] == (
        "submitter", {"cpu": "gpu-h100", "memory": "gpu-h100"})
    started = ray_kueue.get("rayjob.ray.io", "defaulted", ns)
    submitter = started["spec"]["submitterPodTemplate"]["spec"]
    assert submitter["nodeSelector"] == GPU_SELECTOR
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert toleration in submitter["tolerations"]

    def submitter_pod() -> dict[str, Any] | None:
        out = ray_kueue.cluster.kubectl("get", "pods", "-n", ns, "-l", "job-name=defaulted", "-o", "json").stdout
        pods = json.loads(out)["items"]
        return pods[0] if pods else None

    pod = eventually(submitter_pod, 150, what="KubeRay's submitter pod")
    assert pod["spec"]["nodeSelector"] == GPU_SELECTOR
    assert toleration in pod["spec"]["tolerations"]
