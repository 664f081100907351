"""A StatefulSet scaled back up from 0 while its scale-down is still going, live on the tier-2 cluster.

Upstream v0.18's StatefulSet webhook refuses a scale-up from 0 while ``status.replicas`` still counts Pods
of the scale-down (``spec.replicas: Forbidden: scaling down is still in progress``); it reads the object
alone, not the Workload. So the scale-up is refused while a replica is held in Terminating (here by a
finalizer of the test's), and accepted the moment the StatefulSet controller counts none. Worked by
hand: at 0 replicas the Workload is kept, owned by the StatefulSet and on hold (upstream's OnHold), its
quota held while a replica may still run and released once none may; the scale-up lets the same
Workload go, and the StatefulSet ends with it admitted, counting the 2 replicas, and both replicas
running. The webhook guards the object only: the scale
subresource (``kubectl scale``) is not under it, upstream's neither, so the test patches the object.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from pykueue.jobs.statefulset import workload as statefulset_rules
from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import gpu_queue, refused
from tests.e2e.pod_objects import running_on_gpu

pytestmark = pytest.mark.e2e
HOLD = "pykueue.dev/test-hold"


def statefulset(ns: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                                      {"name": "main", "image": "busybox",
                                       "resources": {"requests": {"cpu": "1"}}}]}}}}


def replicas(kueue: Kueue, ns: str, value: int, check: bool = True) -> subprocess.CompletedProcess[str]:
    return kueue.cluster.kubectl("patch", "statefulset", "db", "-n", ns, "--type=merge", "-p",
                                 json.dumps({"spec": {"replicas": value}}), check=check)


def status_replicas(kueue: Kueue, ns: str) -> int:
    return ((kueue.get("statefulset", "db", ns) or {}).get("status") or {}).get("replicas") or 0


def live_workloads(kueue: Kueue, ns: str) -> list[dict[str, Any]]:
    return [w for w in kueue.items("workloads.kueue.x-k8s.io", ns)
            if not w["metadata"].get("deletionTimestamp") and not is_true(w, "Finished")]


def test_a_scale_up_from_zero_waits_for_the_scale_down_and_then_runs_under_one_workload(
        pod_kueue: Kueue, ns: str) -> None:
    kueue = pod_kueue
    gpu_queue(kueue, ns, "3")
    kueue.apply([statefulset(ns)])
    sts = eventually(lambda: kueue.get("statefulset", "db", ns), 30, what="the StatefulSet")
    name = statefulset_rules.workload_name("db", sts["metadata"]["uid"])
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(kueue, f"db-{i}", ns), 180, what=f"db-{i} running")

    kueue.cluster.kubectl("patch", "pod", "db-0", "-n", ns, "--type=merge", "-p",
                          json.dumps({"metadata": {"finalizers": [HOLD]}}))
    try:
        replicas(kueue, ns, 0)
        held = eventually(lambda: (p := kueue.get("pod", "db-0", ns)) is not None
                          and p["metadata"].get("deletionTimestamp") is not None, 60, what="db-0 terminating, held")
        assert held and status_replicas(kueue, ns) > 0
        # a replica may still run: the Workload, on hold already, keeps its quota
        assert is_true(kueue.get("workloads.kueue.x-k8s.io", name, ns), "QuotaReserved")
        refused(replicas(kueue, ns, 2, check=False), "vstatefulset.kb.io",
                "spec.replicas: Forbidden: scaling down is still in progress")
    finally:
        kueue.cluster.kubectl("patch", "pod", "db-0", "-n", ns, "--type=json", "-p",
                              json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]), check=False)

    eventually(lambda: status_replicas(kueue, ns) == 0, 120, what="the StatefulSet counting no replica")

    def on_hold() -> dict[str, Any] | None:
        # upstream's "should delete all pods on scale down to zero": QuotaReserved=False, reason OnHold
        w = kueue.get("workloads.kueue.x-k8s.io", name, ns)
        reserved = condition(w, "QuotaReserved")
        return w if reserved and reserved["status"] == "False" and reserved["reason"] == "OnHold" else None
    before = eventually(on_hold, 120, what="the Workload on hold, its quota released")
    assert not (before.get("status") or {}).get("admission")
    assert [o["uid"] for o in before["metadata"]["ownerReferences"] if o["kind"] == "StatefulSet"] == [sts["metadata"]["uid"]]
    assert before["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == sts["metadata"]["uid"]
    accepted = replicas(kueue, ns, 2, check=False)
    assert accepted.returncode == 0, accepted.stderr

    def settled() -> list[dict[str, Any]] | None:
        found = live_workloads(kueue, ns)
        admitted = [w for w in found if is_true(w, "Admitted")]
        return found if len(found) == 1 and admitted and admitted[0]["metadata"]["name"] == name else None

    (workload,) = eventually(settled, 180, what="one admitted Workload under its name")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 2)]
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(kueue, f"db-{i}", ns), 180, what=f"db-{i} running again")
    assert len(live_workloads(kueue, ns)) == 1
    assert workload["metadata"]["uid"] == before["metadata"]["uid"]  # the held one, let go
