"""Pods and pod groups kept equivalent to their Workloads, live on the tier-2 cluster (issue 37 part 3):
a gated Pod relabelled to another queue is admitted there, a running one keeps its queue (the Pod webhook
refuses the change, in upstream's words), and a Pod's new WorkloadPriorityClass reaches its Workload.
A plain Pod naming a prebuilt Workload runs from it (issue 40).
(A pod group whose members are all replaced by Pods of another shape is covered by unit tests only: live,
the garbage collector deletes the old Workload once its last owner is gone, before any rule of Kueue's.)

Uses the pod integration module's controller fixture (every kind on, the webhooks registered).
"""

from __future__ import annotations

import pytest

from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL as PREBUILT
from pykueue.jobs.pod.workload import workload_from_pod
from tests.e2e.conftest import Kueue, condition, eventually
from tests.e2e.objects import refused
from tests.e2e.pod_objects import gated, get_pod, pod, running_on_gpu, two_gpu_queues, workload_for

pytestmark = pytest.mark.e2e
QUEUE = "kueue.x-k8s.io/queue-name"
CLASS = "kueue.x-k8s.io/priority-class"
WORKLOADS = "workloads.kueue.x-k8s.io"


def _label(kueue: Kueue, name: str, ns: str, *labels: str):
    return kueue.cluster.kubectl("label", "pod", name, "-n", ns, *labels, "--overwrite", check=False)


def test_a_gated_pod_relabelled_to_another_queue_runs_there_and_then_keeps_it(pod_kueue: Kueue, ns: str) -> None:
    """A 2 cpu Pod in `lq` (1 cpu) waits gated. Relabelled `big`, its Workload (the same one) names
    `big` and is admitted there: the Pod runs. Running, relabelling it back is refused by vpod."""
    two_gpu_queues(pod_kueue, ns)
    pod_kueue.apply([pod("mover", ns, "2")])
    wl = eventually(lambda: workload_for(pod_kueue, ns, "mover"), 60, what="mover's workload")
    eventually(lambda: (c := condition(workload_for(pod_kueue, ns, "mover"), "QuotaReserved"))
               and c["status"] == "False", 60, what="mover pending in lq")
    assert gated(get_pod(pod_kueue, "mover", ns))
    moved = _label(pod_kueue, "mover", ns, f"{QUEUE}=big")
    assert moved.returncode == 0, moved.stderr
    eventually(lambda: running_on_gpu(pod_kueue, "mover", ns), 90, what="mover running from big")
    after = workload_for(pod_kueue, ns, "mover")
    assert after is not None and after["spec"]["queueName"] == "big"
    assert after["metadata"]["uid"] == wl["metadata"]["uid"]  # moved in place, as upstream's step 7
    refused(_label(pod_kueue, "mover", ns, f"{QUEUE}=lq"), "vpod.kb.io",
            f'metadata.labels[{QUEUE}]: Invalid value: "lq": field is immutable')


def test_a_pods_new_workload_priority_class_reaches_its_workload(pod_kueue: Kueue, ns: str) -> None:
    """A gated Pod of class `low` (10): relabelled `high`, its Workload takes the class and its value
    (1000). Removing the class is refused by vpod."""
    pod_kueue.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {ns}-low}}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {ns}-high}}
value: 1000
""")
    two_gpu_queues(pod_kueue, ns)
    pod_kueue.apply([pod("ranked", ns, "2", labels={CLASS: f"{ns}-low"})])
    wl = eventually(lambda: workload_for(pod_kueue, ns, "ranked"), 60, what="ranked's workload")
    assert wl["spec"]["priority"] == 10
    relabelled = _label(pod_kueue, "ranked", ns, f"{CLASS}={ns}-high")
    assert relabelled.returncode == 0, relabelled.stderr
    updated = eventually(lambda: (w := workload_for(pod_kueue, ns, "ranked")) and w["spec"].get("priority") == 1000
                         and w, 60, what="ranked's workload at priority 1000")
    assert updated["spec"]["priorityClassRef"]["name"] == f"{ns}-high"
    refused(_label(pod_kueue, "ranked", ns, f"{CLASS}-"), "vpod.kb.io",
            f'metadata.labels[{CLASS}]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload')



def test_a_pod_runs_from_its_prebuilt_workload_and_a_missing_one_is_never_made(pod_kueue: Kueue, ns: str) -> None:
    """Issue 40: kueue.x-k8s.io/prebuilt-workload-name on a plain Pod. The Workload `pre` made beforehand
    gets the Pod as its controller owner and runs it; a Pod naming a Workload that does not exist stays
    gated and no Workload is made for it."""
    two_gpu_queues(pod_kueue, ns)
    made = pod("built", ns, "500m", labels={PREBUILT: "pre"})
    pre = workload_from_pod(made)
    pre["metadata"] = {"name": "pre", "namespace": ns}
    pod_kueue.apply([pre])
    pod_kueue.apply([made])
    running = eventually(lambda: running_on_gpu(pod_kueue, "built", ns), 180, what="built running from pre")
    wl = eventually(lambda: (w := pod_kueue.get(WORKLOADS, "pre", ns)) and w["metadata"].get("ownerReferences") and w,
                    60, what="pre owned by its Pod")
    (owner,) = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod", "built", running["metadata"]["uid"], True)
    assert [w["metadata"]["name"] for w in pod_kueue.items(WORKLOADS, ns)] == ["pre"]

    pod_kueue.apply([pod("waiting", ns, "500m", labels={PREBUILT: "none"})])
    assert gated(get_pod(pod_kueue, "waiting", ns))
    # a Pod created after it admitted and running: the controller has taken the Pods before it
    pod_kueue.apply([pod("after", ns, "500m")])
    eventually(lambda: running_on_gpu(pod_kueue, "after", ns), 180, what="a later Pod running")
    assert gated(get_pod(pod_kueue, "waiting", ns))
    assert [w["metadata"]["name"] for w in pod_kueue.items(WORKLOADS, ns)
            if any(o["name"] == "waiting" for o in w["metadata"].get("ownerReferences") or [])] == []
