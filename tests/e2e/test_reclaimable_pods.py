"""reclaimablePods follow succeeded pods (upstream's `ReclaimablePods` for a Job): pods of a running
Job that succeed give their quota back while the Job runs on, so a waiting Job starts before the first
one finishes.

The pods run "forever" on kwok (a 1 h delay); the test ends them one at a time as a kubelet would, by
setting their phase to Succeeded, so they finish at different times without depending on timing.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, job, local_queue, running, suspended

pytestmark = pytest.mark.e2e


def succeed(kueue: Kueue, pod: dict, namespace: str) -> None:
    """What a kubelet reports when the pod's container exits 0."""
    name = pod["metadata"]["name"]
    started = (pod.get("status") or {}).get("startTime") or "2026-01-01T00:00:00Z"
    patch = {"status": {"phase": "Succeeded", "conditions": [
        {"type": "Ready", "status": "False", "reason": "PodCompleted"}],
        "containerStatuses": [{
            "name": c["name"], "image": c["image"], "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                     "finishedAt": started}}} for c in pod["spec"]["containers"]]}}
    kueue.cluster.kubectl("patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
                          "-p", json.dumps(patch))


def pods_of(kueue: Kueue, job_name: str, namespace: str, phase: str) -> list[dict]:
    return [p for p in kueue.items("pods", namespace)
            if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == job_name
            and (p.get("status") or {}).get("phase") == phase]


def reclaimable(kueue: Kueue, job_name: str, namespace: str) -> list[dict] | None:
    wl = kueue.workload_of(job_name, namespace)
    return None if wl is None else (wl.get("status") or {}).get("reclaimablePods")


def test_succeeded_pods_free_quota_for_a_waiting_job(kueue: Kueue, ns: str) -> None:
    """3 cpu; a Job of 3 one-cpu pods fills it and a 1 cpu Job waits. When the first pod succeeds
    the Workload's reclaimablePods says main: 1, the engine charges 2 cpu and the waiting Job starts
    while the first is still running; the second pod makes it main: 2."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "3"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("wide", ns, "1", pods=3))
    eventually(lambda: running(kueue, "wide", ns), what="wide running")
    eventually(lambda: len(pods_of(kueue, "wide", ns, "Running")) == 3, 60, what="3 pods running")
    kueue.apply(job("waiting", ns, "1"))
    wl = eventually(lambda: (w := kueue.workload_of("waiting", ns)) and condition(w, "QuotaReserved") and w)
    assert condition(wl, "QuotaReserved")["status"] == "False"
    assert suspended(kueue, "waiting", ns)
    assert reclaimable(kueue, "wide", ns) in (None, [])

    succeed(kueue, pods_of(kueue, "wide", ns, "Running")[0], ns)
    eventually(lambda: reclaimable(kueue, "wide", ns) == [{"name": "main", "count": 1}], 60,
               what="reclaimablePods main: 1")
    eventually(lambda: running(kueue, "waiting", ns), 60, what="the waiting Job admitted on the freed quota")
    wide = kueue.workload_of("wide", ns)
    assert is_true(wide, "Admitted") and not is_true(wide, "Finished")
    assert not is_true(kueue.get("job", "wide", ns), "Complete")
    cq = eventually(lambda: (q := kueue.get("clusterqueue", ns)) and (q.get("status") or {}).get(
        "admittedWorkloads") == 2 and q, what="both admitted")
    assert cq["status"]["flavorsReservation"][0]["resources"][0]["total"] == "3"  # 2 of wide + 1 of waiting

    succeed(kueue, pods_of(kueue, "wide", ns, "Running")[0], ns)
    eventually(lambda: reclaimable(kueue, "wide", ns) == [{"name": "main", "count": 2}], 60,
               what="reclaimablePods main: 2")
    eventually(lambda: (q := kueue.get("clusterqueue", ns)) and q["status"]["flavorsReservation"][0][
        "resources"][0]["total"] == "2", what="wide charged 1 cpu")
