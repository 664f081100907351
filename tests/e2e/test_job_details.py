"""batch/v1 Job details live, on the session's controller (no waitForPodsReady): an admission check
whose pod set update contradicts the Job's template finishes the Workload FailedToStart and frees its
quota (upstream's podset.IsPermanent), and no PodsReady condition is written without waitForPodsReady."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import PLAIN_FLAVOR, checked_queue, cluster_queue, job, local_queue, suspended

pytestmark = pytest.mark.e2e
ZONE = "example.com/zone"


def test_an_admission_check_contradicting_the_template_fails_to_start_and_frees_the_quota(kueue: Kueue, ns: str) -> None:
    """A 3 cpu Job selecting zone a in a 4 cpu queue with an admission check; the check's controller
    (the test) says Ready with a pod set update selecting zone b. The Job cannot start on it whatever
    is retried: its Workload finishes FailedToStart with the merge conflict, the Job stays suspended,
    and a second 3 cpu Job gets the quota."""
    checked_queue(kueue, ns, "4")
    pinned = yaml.safe_load(job("pinned", ns, "3"))
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {ZONE: "a"}
    kueue.apply([pinned])
    wl = eventually(lambda: (w := kueue.workload_of("pinned", ns)) and is_true(w, "QuotaReserved") and w,
                    what="pinned's quota reserved")
    patch = json.dumps({"status": {"admissionChecks": [{
        "name": f"{ns}-check", "state": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z",
        "podSetUpdates": [{"name": "main", "nodeSelector": {ZONE: "b"}}]}]}})
    kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--subresource=status",
                          "--type=merge", "-p", patch)
    finished = eventually(lambda: (w := kueue.workload_of("pinned", ns)) and is_true(w, "Finished") and w,
                          what="pinned's workload finished")
    cond = condition(finished, "Finished")
    assert cond["reason"] == "FailedToStart", cond
    assert cond["message"] == ("invalid admission check PodSetUpdate: conflict for nodeSelector: "
                               f"conflict for key={ZONE}, value1=a, value2=b"), cond
    assert suspended(kueue, "pinned", ns)
    assert kueue.get("job", "pinned", ns)["spec"]["template"]["spec"]["nodeSelector"] == {ZONE: "a"}
    kueue.apply(job("next", ns, "3"))
    eventually(lambda: is_true(kueue.workload_of("next", ns), "QuotaReserved"), what="next given the freed quota")


def test_no_pods_ready_condition_without_wait_for_pods_ready(kueue: Kueue, ns: str) -> None:
    """The session's controller runs without waitForPodsReady: a Job whose pod became ready and then
    completed finishes its Workload, which never got a PodsReady condition (upstream writes it only
    under waitForPodsReady)."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("quick", ns, "1", runs_for="6s"))
    eventually(lambda: ((kueue.get("job", "quick", ns) or {}).get("status") or {}).get("ready") == 1,
               what="quick's pod ready")
    done = eventually(lambda: (w := kueue.workload_of("quick", ns)) and is_true(w, "Finished") and w,
                      90, what="quick's workload finished")
    assert condition(done, "PodsReady") is None, done["status"]["conditions"]
