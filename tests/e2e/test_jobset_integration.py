"""JobSet live, on the tier-2 cluster with JobSet's real controller (the ``jobset`` addon, built from its
source archive): Kueue suspends a JobSet on create, admission starts it with the flavor in each
replicated job's template, JobSet's controller makes the child Jobs and kwok runs their Pods.

Each behaviour is upstream's (site/content/en/docs/tasks/run/jobsets.md, test/e2e/singlecluster/
jobset_test.go): one Workload per JobSet with a pod set per replicated job; the child Jobs are never
queued themselves; the Workload finishes with the JobSet; a preempted JobSet is suspended with its
templates as created, and JobSet's controller deletes its Jobs.

The module starts the addon on the session's cluster and, as the Ray module does, stops the session's
controller and runs its own with the JobSet integration and its webhooks on; afterwards the addon's
manager stops (its webhook configurations go with it) and the session's controller runs again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import as_created, gpu_queue, priority_classes, scenario_in_namespace, workload_for

pytestmark = pytest.mark.e2e
GPU_NODE = "gpu-h100-0"
GPU_SELECTOR = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture
def jobset_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def jobset(name: str, ns: str, *, workers: int = 2, cpu: str = "1", runs_for: str = "0s",
           priority_class: str | None = None) -> dict[str, Any]:
    """Replicated jobs driver (1 Job of 1 pod) and workers (``workers`` Jobs of 2 pods), ``cpu`` each."""
    def replicated(rj: str, replicas: int, pods: int) -> dict[str, Any]:
        spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [
            {"name": rj, "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        return {"name": rj, "replicas": replicas, "template": {"spec": {
            "parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": runs_for}}, "spec": spec}}}}

    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicatedJobs": [replicated("driver", 1, 1), replicated("workers", workers, 2)]}}


def jobset_pods(kueue: Kueue, ns: str, name: str) -> list[dict[str, Any]]:
    out = kueue.cluster.kubectl("get", "pods", "-n", ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}",
                                "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def child_jobs(kueue: Kueue, ns: str, name: str) -> list[dict[str, Any]]:
    out = kueue.cluster.kubectl("get", "jobs", "-n", ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}",
                                "-o", "json").stdout
    return json.loads(out)["items"]


def test_a_jobset_is_admitted_runs_on_its_flavor_and_finishes(jobset_kueue: Kueue, ns: str) -> None:
    """5 cpu on the H100 flavor; a JobSet of driver (1 pod) and 2 workers Jobs of 2 pods, 1 cpu each
    (5 pods). Created suspended by Kueue's webhook; one Workload jobset-<name>-<hash> with pod sets
    driver x1 and workers x4; admitted, its child Jobs (no Workload of their own) run their Pods on the
    H100 node with the flavor's selector and toleration; the JobSet completes and its Workload finishes
    Succeeded."""
    gpu_queue(jobset_kueue, ns, "5")
    assert as_created(jobset_kueue, jobset("train", ns))["spec"]["suspend"] is True  # Kueue's webhook
    jobset_kueue.apply([jobset("train", ns, runs_for="5s")])
    wl = eventually(lambda: workload_for(jobset_kueue, ns, "JobSet", "train"), 60, what="the JobSet's workload")
    assert wl["metadata"]["name"].startswith("jobset-train-")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("driver", 1), ("workers", 4)]
    pods = eventually(lambda: (found := jobset_pods(jobset_kueue, ns, "train")) and len(found) == 5 and found,
                      120, what="the JobSet's 5 pods")
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == GPU_SELECTOR
        assert GPU_TOLERATION in pod["spec"]["tolerations"]
    jobs = child_jobs(jobset_kueue, ns, "train")
    assert sorted(j["metadata"]["name"] for j in jobs) == ["train-driver-0", "train-workers-0", "train-workers-1"]
    for job in jobs:
        assert workload_for(jobset_kueue, ns, "Job", job["metadata"]["name"]) is None
    finished = eventually(lambda: (w := workload_for(jobset_kueue, ns, "JobSet", "train")) and is_true(w, "Finished")
                          and w, 150, what="the JobSet's workload finished")
    assert condition(finished, "Finished")["reason"] == "Succeeded"
    assert is_true(jobset_kueue.get("jobset.jobset.x-k8s.io", "train", ns), "Completed")


def test_one_over_quota_waits_suspended_without_jobs(jobset_kueue: Kueue, ns: str) -> None:
    """3 cpu: a JobSet of 5 pods of 1 cpu stays suspended, JobSet's controller makes no Pods, and its
    Workload says what is missing."""
    gpu_queue(jobset_kueue, ns, "3")
    jobset_kueue.apply([jobset("big", ns)])
    message = eventually(lambda: (c := condition(workload_for(jobset_kueue, ns, "JobSet", "big"), "QuotaReserved"))
                         and c["status"] == "False" and c["message"], 60, what="big's pending message")
    assert "cpu in flavor gpu-h100" in message
    assert jobset_kueue.get("jobset.jobset.x-k8s.io", "big", ns)["spec"]["suspend"] is True
    assert jobset_pods(jobset_kueue, ns, "big") == []


def test_a_preempted_jobset_is_suspended_with_its_templates_restored(jobset_kueue: Kueue, ns: str) -> None:
    """Priority preemption in a 3 cpu queue: low (driver + 1 worker Job of 2 pods, 3 cpu) runs with
    PodsReady; high, the same, evicts it: low is suspended again with each replicated job's template
    as created (no flavor selector), its Pods go, and high's Pods run on the H100 node."""
    jobset_kueue.apply(priority_classes(ns))
    gpu_queue(jobset_kueue, ns, "3", preemption="{withinClusterQueue: LowerPriority}")
    jobset_kueue.apply([jobset("low", ns, workers=1, runs_for="600s", priority_class=f"{ns}-low")])
    eventually(lambda: len([p for p in jobset_pods(jobset_kueue, ns, "low")
                            if p.get("status", {}).get("phase") == "Running"]) == 3, 120, what="low's 3 pods running")
    eventually(lambda: is_true(workload_for(jobset_kueue, ns, "JobSet", "low"), "PodsReady"), 90,
               what="low PodsReady from the JobSet's ready replicas")
    jobset_kueue.apply([jobset("high", ns, workers=1, runs_for="600s", priority_class=f"{ns}-high")])
    low = eventually(lambda: (o := jobset_kueue.get("jobset.jobset.x-k8s.io", "low", ns)) and o["spec"].get("suspend")
                     and o, 90, what="low suspended")
    for replicated in low["spec"]["replicatedJobs"]:
        assert "nodeSelector" not in replicated["template"]["spec"]["template"]["spec"]
    eventually(lambda: jobset_pods(jobset_kueue, ns, "low") == [], 120, what="low's pods gone")
    pods = eventually(lambda: (found := jobset_pods(jobset_kueue, ns, "high")) and len(found) == 3 and found,
                      120, what="high's pods")
    assert all(p["spec"]["nodeName"] == GPU_NODE for p in pods if p["spec"].get("nodeName"))
    assert not is_true(workload_for(jobset_kueue, ns, "JobSet", "low"), "Admitted")


def test_simulate_predicts_a_jobsets_admission(jobset_kueue: Kueue, ns: str, tmp_path) -> None:
    """tests/scenarios/integration_jobset.yaml through `simulate`, then live (its ClusterQueue named
    after this test, in its namespace): the JobSet's Workload is admitted with the pod sets, counts
    and flavors simulate predicted (driver on small, the four workers on big)."""
    from tests.scenario_harness import SCENARIOS, simulate, split

    _, text = split(SCENARIOS / "integration_jobset.yaml")
    code, predicted, err = simulate(text, tmp_path)
    assert code == 0 and predicted is not None, err
    (expected,) = [w for w in predicted["workloads"] if w["kind"] == "JobSet"]
    docs = scenario_in_namespace(text, ns)
    jobset_kueue.apply(docs)

    def admitted() -> dict[str, Any] | None:
        wl = workload_for(jobset_kueue, ns, "JobSet", "js")
        return wl if is_true(wl, "Admitted") else None

    wl = eventually(admitted, 120, what="the JobSet's workload admitted")
    got = [{"name": a["name"], "count": a["count"], "flavors": a["flavors"]}
           for a in wl["status"]["admission"]["podSetAssignments"]]
    assert got == expected["admission"]["podSetAssignments"]
