"""`pykueue controller` on the tier 2 cluster, driven with kubectl as a Kueue user would.

Each expected outcome is worked out by hand from the quotas and requests in the test.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true, settled
from tests.e2e.objects import (
    GPU_FLAVOR,
    PLAIN_FLAVOR,
    checked_queue,
    cluster_queue,
    events,
    job,
    local_queue,
    low_priority_job_running,
    running,
    suspended,
)

pytestmark = pytest.mark.e2e


def test_seed_001_smoke_job(kueue: Kueue, ns: str) -> None:
    """Seed 001: quota applied, Job suspended, admitted, unsuspended with the flavor's node selector
    and toleration, pods run on the GPU node, Job completes, Workload finishes, quota freed."""
    kueue.apply(GPU_FLAVOR)
    kueue.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {ns}}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: gpu-h100
      resources:
      - {{name: cpu, nominalQuota: "100"}}
      - {{name: memory, nominalQuota: 800Gi}}
      - {{name: nvidia.com/gpu, nominalQuota: 8}}
""")
    kueue.apply(local_queue(ns, ns, "gpu-queue"))
    kueue.apply(f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: train-smoke
  namespace: {ns}
  labels: {{kueue.x-k8s.io/queue-name: gpu-queue}}
spec:
  parallelism: 2
  completions: 2
  suspend: true
  template:
    metadata: {{annotations: {{pod-complete.stage.kwok.x-k8s.io/delay: "3s"}}}}
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.05-py3
        command: ["nvidia-smi"]
        resources:
          requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: 1}}
          limits: {{nvidia.com/gpu: 1}}
""")
    wl = eventually(lambda: (w := kueue.workload_of("train-smoke", ns)) and is_true(w, "Admitted") and w,
                    what="the Workload admitted")
    assert condition(wl, "QuotaReserved")["message"] == f"Quota reserved in ClusterQueue {ns}"
    assignment = wl["status"]["admission"]["podSetAssignments"][0]
    assert assignment["flavors"] == {"cpu": "gpu-h100", "memory": "gpu-h100", "nvidia.com/gpu": "gpu-h100"}
    assert assignment["count"] == 2
    assert assignment["resourceUsage"] == {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "2"}
    started = eventually(lambda: running(kueue, "train-smoke", ns) and kueue.get("job", "train-smoke", ns))
    pod_spec = started["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod_spec["tolerations"]
    eventually(lambda: is_true(kueue.get("job", "train-smoke", ns), "Complete"), 90, what="Job Complete")
    for pod in kueue.items("pods", ns):
        assert pod["spec"]["nodeName"] == "gpu-h100-0"
    finished = eventually(lambda: (w := kueue.workload_of("train-smoke", ns)) and is_true(w, "Finished") and w)
    assert condition(finished, "Finished")["reason"] == "Succeeded"
    cq = eventually(lambda: (q := kueue.get("clusterqueue", ns)) and (q.get("status") or {}).get(
        "reservingWorkloads") == 0 and q, what="quota freed")
    usage = {r["name"]: r["total"] for r in cq["status"]["flavorsReservation"][0]["resources"]}
    assert usage == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}


def test_job_over_quota_stays_suspended(kueue: Kueue, ns: str) -> None:
    """Seed 001's failure mode: 6 cpu asked of a 4 cpu queue that cannot borrow."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("too-big", ns, "6"))
    # The first status may come before the scheduler looked at it ("Waiting for its turn ..."); then
    # the scheduler's answer, with the quantities.
    wl = eventually(lambda: (w := kueue.workload_of("too-big", ns)) and "insufficient quota" in
                    ((condition(w, "QuotaReserved") or {}).get("message") or "") and w,
                    what="the scheduler's QuotaReserved=False message")
    cond = condition(wl, "QuotaReserved")
    assert cond["status"] == "False"
    assert "insufficient quota for cpu in flavor plain" in cond["message"], cond["message"]
    settled(kueue, ns)
    assert suspended(kueue, "too-big", ns)
    assert not is_true(kueue.workload_of("too-big", ns), "Admitted")


def test_equivalent_job_set_aside_gets_no_condition(kueue: Kueue, ns: str) -> None:
    """Two equal 6 cpu Jobs on a 4 cpu queue: the scheduler tries the first and tells it why; the second
    is set aside with it untried, and the API shows it no QuotaReserved condition (upstream's
    bulk move of equivalent workloads writes nothing)."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("first", ns, "6") + "---" + job("second", ns, "6"))

    def told() -> list[str] | None:
        shown = [(condition(w, "QuotaReserved") or {}).get("message") or ""
                 for w in (kueue.workload_of("first", ns), kueue.workload_of("second", ns)) if w]
        return shown if len(shown) == 2 and any("insufficient quota" in m for m in shown) else None

    eventually(told, what="the tried Job's QuotaReserved=False message")
    settled(kueue, ns)  # the status writer's passes go by
    shown = told()
    assert shown is not None and sorted(bool(m) for m in shown) == [False, True], shown
    assert suspended(kueue, "first", ns) and suspended(kueue, "second", ns)


def test_priority_preemption_suspends_and_restores_the_victim(kueue: Kueue, ns: str) -> None:
    """A 4 cpu queue runs a low-priority 3 cpu Job; a high-priority 3 cpu Job preempts it."""
    low_priority_job_running(kueue, ns)
    kueue.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
    eventually(lambda: running(kueue, "high", ns), what="high running")
    victim = eventually(lambda: (w := kueue.workload_of("low", ns)) and is_true(w, "Evicted") and w)
    assert condition(victim, "Evicted")["reason"] == "Preempted"
    preempted = condition(victim, "Preempted")
    assert preempted["status"] == "True" and preempted["reason"] == "InClusterQueue"
    assert "due to prioritization in the ClusterQueue" in preempted["message"]
    assert not is_true(victim, "Admitted")
    released = condition(victim, "QuotaReserved")
    assert released["status"] == "False" and "Quota reserved" not in released["message"], released
    assert "admission" not in victim["status"]
    low = eventually(lambda: suspended(kueue, "low", ns) and kueue.get("job", "low", ns), what="low suspended")
    assert "nodeSelector" not in low["spec"]["template"]["spec"] or not low["spec"]["template"]["spec"]["nodeSelector"]
    assert condition(kueue.workload_of("high", ns), "Admitted")["status"] == "True"


def test_borrowing_then_reclaim(kueue: Kueue, ns: str) -> None:
    """Two 4 cpu queues in a cohort: A borrows B's idle 4 cpu for an 8 cpu Job; when B needs 4 cpu
    back, A's Job is preempted (reclaim within the cohort) and B's runs."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(f"{ns}-a", "4", cohort=f"{ns}-cohort"))
    kueue.apply(cluster_queue(f"{ns}-b", "4", cohort=f"{ns}-cohort", preemption="{reclaimWithinCohort: Any}"))
    kueue.apply(local_queue(ns, f"{ns}-a", "lq-a"))
    kueue.apply(local_queue(ns, f"{ns}-b", "lq-b"))
    kueue.apply(job("borrower", ns, "8", queue="lq-a"))
    eventually(lambda: running(kueue, "borrower", ns), what="borrower running on borrowed quota")
    cq_a = eventually(lambda: (q := kueue.get("clusterqueue", f"{ns}-a")) and (q.get("status") or {}).get(
        "admittedWorkloads") == 1 and q)
    assert cq_a["status"]["flavorsReservation"][0]["resources"][0] == {"name": "cpu", "total": "8", "borrowed": "4"}
    kueue.apply(job("owner", ns, "4", queue="lq-b"))
    eventually(lambda: running(kueue, "owner", ns), what="owner running")
    victim = eventually(lambda: (w := kueue.workload_of("borrower", ns)) and is_true(w, "Preempted") and w)
    assert condition(victim, "Preempted")["reason"] == "InCohortReclamation"
    eventually(lambda: suspended(kueue, "borrower", ns), what="borrower suspended")


@pytest.mark.parametrize("strategy, small_runs", [("StrictFIFO", False), ("BestEffortFIFO", True)])
def test_strict_fifo_blocks_best_effort_does_not(kueue: Kueue, ns: str, strategy: str, small_runs: bool) -> None:
    """4 cpu with 3 in use: the older 2 cpu Job cannot fit; the newer 1 cpu Job could. StrictFIFO
    keeps it behind the head; BestEffortFIFO lets it through."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4", strategy=strategy))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("running", ns, "3"))
    eventually(lambda: running(kueue, "running", ns))
    kueue.apply(job("big", ns, "2"))
    eventually(lambda: kueue.workload_of("big", ns))
    time.sleep(1.1)  # creation timestamps have whole seconds: "small" is strictly newer
    kueue.apply(job("small", ns, "1"))
    if small_runs:
        eventually(lambda: running(kueue, "small", ns), what="small admitted past the head")
    else:
        eventually(lambda: kueue.workload_of("small", ns), what="small's Workload")
        settled(kueue, ns)
        assert suspended(kueue, "small", ns)
        # Never tried behind the StrictFIFO head: as upstream, the API shows it no condition of its own.
        wl = kueue.workload_of("small", ns)
        assert not is_true(wl, "QuotaReserved") and not is_true(wl, "Admitted"), wl
    assert suspended(kueue, "big", ns)


def test_stop_policy_set_with_kubectl_patch(kueue: Kueue, ns: str) -> None:
    """HoldAndDrain evicts the running Job (reason ClusterQueueStopped); None admits it again."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("worker", ns, "2"))
    eventually(lambda: running(kueue, "worker", ns))
    kueue.cluster.kubectl("patch", "clusterqueue", ns, "--type=merge", "-p", '{"spec":{"stopPolicy":"HoldAndDrain"}}')
    wl = eventually(lambda: (w := kueue.workload_of("worker", ns)) and is_true(w, "Evicted") and w)
    assert condition(wl, "Evicted")["reason"] == "ClusterQueueStopped"
    eventually(lambda: suspended(kueue, "worker", ns), what="worker suspended")
    cq = eventually(lambda: (q := kueue.get("clusterqueue", ns)) and condition(q, "Active")
                    and condition(q, "Active")["status"] == "False" and q)
    assert condition(cq, "Active")["reason"] == "Stopped"
    kueue.cluster.kubectl("patch", "clusterqueue", ns, "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
    eventually(lambda: running(kueue, "worker", ns), what="worker admitted again")


def test_admission_check_driven_by_the_test(kueue: Kueue, ns: str) -> None:
    """Quota is reserved but the Job waits until the test, acting as the check's controller, says Ready."""
    checked_queue(kueue, ns, "4")
    kueue.apply(job("checked", ns, "1"))
    wl = eventually(lambda: (w := kueue.workload_of("checked", ns)) and is_true(w, "QuotaReserved") and w)
    assert condition(wl, "Admitted")["status"] == "False"
    assert [(c["name"], c["state"]) for c in wl["status"]["admissionChecks"]] == [(f"{ns}-check", "Pending")]
    settled(kueue, ns)
    assert suspended(kueue, "checked", ns)
    patch = json.dumps({"status": {"admissionChecks": [{
        "name": f"{ns}-check", "state": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--subresource=status",
                          "--type=merge", "-p", patch)
    eventually(lambda: running(kueue, "checked", ns), what="Job started once the check is Ready")
    assert is_true(kueue.workload_of("checked", ns), "Admitted")


def test_rejected_admission_check_deactivates(kueue: Kueue, ns: str) -> None:
    """A check's controller says Rejected: one eviction, reason Deactivated with its cause, the
    Workload deactivated (spec.active false) and its Job suspended again."""
    checked_queue(kueue, ns, "4")
    kueue.apply(job("rejected", ns, "1"))
    wl = eventually(lambda: (w := kueue.workload_of("rejected", ns)) and is_true(w, "QuotaReserved") and w)
    patch = json.dumps({"status": {"admissionChecks": [{
        "name": f"{ns}-check", "state": "Rejected", "message": "no", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--subresource=status",
                          "--type=merge", "-p", patch)
    # Deactivated at once; the reservation goes once the job side has seen the Job stopped.
    wl = eventually(lambda: (w := kueue.workload_of("rejected", ns)) and is_true(w, "Evicted")
                    and w["spec"].get("active") is False and not is_true(w, "QuotaReserved") and w,
                    what="deactivated and released")
    evicted = condition(wl, "Evicted")
    assert evicted["reason"] == "DeactivatedDueToAdmissionCheck"
    assert evicted["message"].startswith("The workload is deactivated due to Admission check(s): "), evicted
    assert f"{ns}-check" in evicted["message"]
    assert condition(wl, "QuotaReserved")["status"] == "False"
    assert "admission" not in wl["status"]
    assert suspended(kueue, "rejected", ns)


def test_seed_004_all_or_nothing_on_a_short_clock(kueue: Kueue, ns: str, tmp_path) -> None:
    """Seed 004's sequence with waitForPodsReady timeout 3 s, backoff base 1 s, limit 3: pods that
    never get ready are evicted at 3 s, requeued after 1, 2 and 4 s, and deactivated at the fourth
    timeout (about 19 s): one eviction with reason Deactivated and its cause (upstream's
    DeactivatedDueToRequeuingLimitExceeded), requeueState cleared."""
    config = tmp_path / "config.yaml"
    config.write_text("""
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  timeout: 3s
  blockAdmission: false
  requeuingStrategy: {timestamp: Eviction, backoffLimitCount: 3, backoffBaseSeconds: 1}
""")
    # a controller of its own: a 3 s PodsReady timeout would evict the jobs of every test beside it
    with kueue.restarted_with(config):
        kueue.apply(PLAIN_FLAVOR)
        kueue.apply(cluster_queue(ns, "4"))
        kueue.apply(local_queue(ns, ns))
        never_ready = job("all-or-nothing", ns, "1", pods=4).replace(
            "restartPolicy: Never", "restartPolicy: Never\n      nodeSelector: {no-such-node: here}")
        kueue.apply(never_ready)
        eventually(lambda: running(kueue, "all-or-nothing", ns), what="first admission")
        started = time.monotonic()
        wl = eventually(lambda: (w := kueue.workload_of("all-or-nothing", ns)) and w["spec"].get("active") is False
                        and w, 60, what="deactivated")
        elapsed = time.monotonic() - started
        assert 14 <= elapsed <= 35, elapsed  # 3 + 1 + 3 + 2 + 3 + 4 + 3 = 19 s of timers
        # As upstream: Kueue's deactivation is one eviction with reason Deactivated and the cause
        # (ReasonWithCause: DeactivatedDueToRequeuingLimitExceeded), and it drops status.requeueState
        # (reactivation starts the count from zero). The reservation goes only once the job side has
        # seen the Job stopped, which can come later than the eviction under load.
        message = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
        wl = eventually(lambda: (w := kueue.workload_of("all-or-nothing", ns)) and
                        w["status"].get("requeueState") is None and
                        (condition(w, "Evicted") or {}).get("reason") == "DeactivatedDueToRequeuingLimitExceeded"
                        and not is_true(w, "QuotaReserved")
                        and w, 60, what="requeueState cleared, evicted as Deactivated, reservation released")
        assert condition(wl, "Evicted")["message"] == message
        reserved = condition(wl, "QuotaReserved")
        # upstream's fallback reason (PendingEvaluation under UnadmittedWorkloadsObservability); Requeued says why
        assert (reserved["status"], reserved["reason"], reserved["message"]) == ("False", "Pending", message)
        eventually(lambda: suspended(kueue, "all-or-nothing", ns), what="Job suspended again")
        reasons = eventually(lambda: (e := events(kueue, ns, wl["metadata"]["name"])) and
                             "WorkloadDeactivated" in e and e, 20)
        assert reasons.count("Admitted") == 4
        assert reasons.count("EvictedDueToPodsReadyTimeout") == 3
        assert reasons.count("EvictedDueToDeactivatedDueToRequeuingLimitExceeded") == 1
