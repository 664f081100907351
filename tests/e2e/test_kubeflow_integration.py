"""PyTorchJob live, on the tier-2 cluster with the Kubeflow training-operator v1.9.3 (the ``kubeflow``
addon, built from its source archive): Kueue suspends a PyTorchJob on create, admission starts it with
the flavor in each replica type's template, the training-operator makes its Pods and kwok runs them.

Each behaviour is upstream's (site/content/en/docs/tasks/run/kubeflow/pytorchjobs.md,
test/e2e/singlecluster/pytorchjob_test.go, pkg/controller/jobs/kubeflow/jobs/pytorchjob): one Workload
``pytorchjob-<name>-<hash>`` with a pod set per replica type (``master``, ``worker``); a job over quota
waits suspended with no Pods; a preempted PyTorchJob is suspended again and the training-operator
deletes its Pods (it honours ``runPolicy.suspend``).

kwok completes only Pods a Job owns (pykueue/devcluster/kwok-stages.yaml's ``pod-complete``); a
PyTorchJob's Pods run until stopped, so the first test ends its Pods the way a kubelet reports exits,
by setting their status to Succeeded with exit code 0; the training-operator then marks the job
Succeeded from its Master's success (the PyTorchJob success policy).

The module uses the session's shared integrations controller (``integrations_kueue``), beside which the
addon runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import as_created, gpu_queue, priority_classes, workload_for
from tests.e2e.running import Sampler

pytestmark = pytest.mark.e2e
GPU_NODE = "gpu-h100-0"
GPU_SELECTOR = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RESOURCE = "pytorchjob.kubeflow.org"


@pytest.fixture
def kubeflow_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def pytorchjob(name: str, ns: str, *, workers: int = 2, cpu: str = "1",
               priority_class: str | None = None) -> dict[str, Any]:
    """Master 1 + Worker ``workers``, ``cpu`` each, container ``pytorch`` (the name the training-operator's
    webhook requires), restart policy Never, queued in ``lq``."""
    def replica(replicas: int) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [
            {"name": "pytorch", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        return {"replicas": replicas, "restartPolicy": "Never", "template": {"spec": spec}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}}}


def job_pods(kueue: Kueue, ns: str, name: str) -> list[dict[str, Any]]:
    """The PyTorchJob's Pods not being deleted (the training-operator labels them with the job's name)."""
    out = kueue.cluster.kubectl("get", "pods", "-n", ns, "-l", f"training.kubeflow.org/job-name={name}",
                                "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def succeed(kueue: Kueue, pod: dict[str, Any]) -> None:
    """Report ``pod``'s container as exited 0 and the Pod Succeeded, as its kubelet would."""
    now = pod["status"].get("startTime")
    status = {"phase": "Succeeded", "containerStatuses": [
        {"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}}
        for c in pod["spec"]["containers"]]}
    kueue.cluster.kubectl("patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"],
                          "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


def test_a_pytorchjob_is_admitted_runs_on_its_flavor_and_finishes(kubeflow_kueue: Kueue, ns: str) -> None:
    """3 cpu on the H100 flavor; a PyTorchJob of Master 1 + Worker 2, 1 cpu each (3 cpu: fits exactly).
    Created suspended by Kueue's webhook (``runPolicy.suspend``); one Workload pytorchjob-<name>-<hash>
    with pod sets master x1 and worker x2, admitted on gpu-h100; the training-operator makes 3 Pods
    (train-master-0, train-worker-0, train-worker-1) that run on the H100 node with the flavor's selector
    and toleration. When they exit 0 the training-operator marks the job Succeeded and its Workload
    finishes with reason Succeeded."""
    gpu_queue(kubeflow_kueue, ns, "3")
    assert as_created(kubeflow_kueue, pytorchjob("train", ns))["spec"]["runPolicy"]["suspend"] is True
    kubeflow_kueue.apply([pytorchjob("train", ns)])
    wl = eventually(lambda: workload_for(kubeflow_kueue, ns, "PyTorchJob", "train"), 60, what="the job's workload")
    assert wl["metadata"]["name"].startswith("pytorchjob-train-")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]
    admitted = eventually(lambda: (w := workload_for(kubeflow_kueue, ns, "PyTorchJob", "train"))
                          and is_true(w, "Admitted") and w, 60, what="the workload admitted")
    assert {a["name"]: a["flavors"] for a in admitted["status"]["admission"]["podSetAssignments"]} == {
        "master": {"cpu": "gpu-h100"}, "worker": {"cpu": "gpu-h100"}}
    pods = eventually(lambda: len(found := running(job_pods(kubeflow_kueue, ns, "train"))) == 3 and found,
                      120, what="the job's 3 pods running")
    assert sorted(p["metadata"]["name"] for p in pods) == ["train-master-0", "train-worker-0", "train-worker-1"]
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == GPU_SELECTOR
        assert GPU_TOLERATION in pod["spec"]["tolerations"]
        assert pod["spec"]["nodeName"] == GPU_NODE
    for pod in pods:
        succeed(kubeflow_kueue, pod)
    eventually(lambda: is_true(kubeflow_kueue.get(RESOURCE, "train", ns), "Succeeded"), 90, what="the job succeeded")
    finished = eventually(lambda: (w := workload_for(kubeflow_kueue, ns, "PyTorchJob", "train"))
                          and is_true(w, "Finished") and w, 90, what="the job's workload finished")
    assert condition(finished, "Finished")["reason"] == "Succeeded"


def test_one_over_quota_waits_suspended_without_pods(kubeflow_kueue: Kueue, ns: str) -> None:
    """3 cpu: ``first`` (3 cpu) is admitted and runs; ``second``, the same, no longer fits (3 + 3 > 3),
    so it stays suspended, the training-operator makes no Pods for it, and its Workload has
    QuotaReserved=False with reason Pending (the controller's default wording, not the granular
    reasons) and a message naming the flavor's cpu."""
    gpu_queue(kubeflow_kueue, ns, "3")
    kubeflow_kueue.apply([pytorchjob("first", ns)])
    eventually(lambda: len(running(job_pods(kubeflow_kueue, ns, "first"))) == 3, 120, what="first's 3 pods running")
    kubeflow_kueue.apply([pytorchjob("second", ns)])
    pending = eventually(lambda: (c := condition(workload_for(kubeflow_kueue, ns, "PyTorchJob", "second"),
                                                 "QuotaReserved")) and c["status"] == "False" and c,
                         60, what="second's QuotaReserved=False")
    assert pending["reason"] == "Pending"
    assert "cpu in flavor gpu-h100" in pending["message"]
    assert kubeflow_kueue.get(RESOURCE, "second", ns)["spec"]["runPolicy"]["suspend"] is True
    assert job_pods(kubeflow_kueue, ns, "second") == []


def test_a_higher_priority_pytorchjob_preempts_a_running_one(kubeflow_kueue: Kueue, ns: str) -> None:
    """Priority preemption in a 3 cpu queue (withinClusterQueue: LowerPriority): ``low`` (3 cpu) runs;
    ``high``, the same at a higher priority, does not fit beside it, so Kueue evicts low: low is
    suspended again and the training-operator deletes its Pods; high is admitted and its 3 Pods run on
    the H100 node.

    What runs never exceeds the quota: on suspend the training-operator issues the deletes and zeroes
    ``replicaStatuses[*].active`` at once, while the Pods run on through their termination grace period
    (30 s; kwok leaves them Running until it ends). pykueue holds low's quota until none of its Pods
    may run (``TrainingJob.lingering_pods``, by the ``training.kubeflow.org/job-name`` label), so
    ``running.Sampler``, which counts a terminating Pod until its deletionTimestamp, never sees more
    than 3 cpu across both jobs (upstream's kubeflowjob releases at ``active: 0``: 6 cpu then)."""
    kubeflow_kueue.apply(priority_classes(ns))
    gpu_queue(kubeflow_kueue, ns, "3", preemption="{withinClusterQueue: LowerPriority}")
    kubeflow_kueue.apply([pytorchjob("low", ns, priority_class=f"{ns}-low")])
    eventually(lambda: len(running(job_pods(kubeflow_kueue, ns, "low"))) == 3, 120, what="low's 3 pods running")
    sampler = Sampler(kubeflow_kueue, ns)

    def high_running() -> bool:
        sampler.sample()
        return len(running(job_pods(kubeflow_kueue, ns, "high"))) == 3

    kubeflow_kueue.apply([pytorchjob("high", ns, priority_class=f"{ns}-high")])
    eventually(high_running, 240, what="high's 3 pods running")
    assert kubeflow_kueue.get(RESOURCE, "low", ns)["spec"]["runPolicy"]["suspend"] is True
    low = workload_for(kubeflow_kueue, ns, "PyTorchJob", "low")
    assert not is_true(low, "Admitted") and condition(low, "Preempted") is not None
    assert all(p["spec"]["nodeName"] == GPU_NODE for p in job_pods(kubeflow_kueue, ns, "high"))
    assert sampler.samples > 1
    assert sampler.peak <= 3000, f"ran {sampler.peak} milli-cpu on a 3 cpu queue"
