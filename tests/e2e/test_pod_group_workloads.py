"""A pod group's Workload followed live on the tier-2 cluster (issue 37): a prebuilt group Workload
(``kueue.x-k8s.io/prebuilt-workload-name`` equal to the group's name) runs the group it matches and is
finished ``OutOfSync``, never deleted, when the group's roles are not its pod sets (upstream's
``ensurePrebuiltWorkloadInSync`` with the group's ``EquivalentToWorkload``); a gated group relabelled to
another queue moves its Workload there in place (upstream's step 7), seen on the Workload's UID, which
stays the same, and on the ClusterQueue that admits it.

Uses the pod integration module's controller fixture (every kind on, the webhooks registered).
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL as PREBUILT
from pykueue.jobs.pod import groups as pod_rules
from pykueue.jobs.pod.workload import GROUP_NAME_LABEL, GROUP_TOTAL_COUNT, workload_from_pod
from tests.e2e.conftest import Kueue, condition, eventually
from tests.e2e.pod_objects import gated, get_pod, pod, running_on_gpu, two_gpu_queues

pytestmark = pytest.mark.e2e
QUEUE = "kueue.x-k8s.io/queue-name"
WORKLOADS = "workloads.kueue.x-k8s.io"


def _member(name: str, ns: str, group: str, cpu: str, *, prebuilt: bool = False) -> dict[str, Any]:
    labels = {GROUP_NAME_LABEL: group, **({PREBUILT: group} if prebuilt else {})}
    return pod(name, ns, cpu, labels=labels, annotations={GROUP_TOTAL_COUNT: "2"})


def _as_admitted(spec: dict[str, Any]) -> dict[str, Any]:
    """A member's spec as the Pod webhook sees it: the API server's admission plugins have run first
    (DefaultTolerationSeconds adds the not-ready and unreachable tolerations, Priority sets priority 0),
    and the role hash covers both."""
    tolerations = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]
    return {**spec, "tolerations": tolerations, "priority": 0}


def _group_workload(ns: str, group: str, cpu: str, queue: str = "big") -> dict[str, Any]:
    """The Workload someone made beforehand for a group of two ``cpu`` members: one pod set named for
    their role (the role hash the Pod webhook writes), count 2."""
    shape = _member("shape", ns, group, cpu, prebuilt=True)
    made = workload_from_pod(shape)
    made["metadata"] = {"name": group, "namespace": ns, "annotations": {pod_rules.IS_GROUP_WORKLOAD: "true"}}
    made["spec"]["queueName"] = queue
    made["spec"]["podSets"][0].update({"name": pod_rules.role_hash(_as_admitted(shape["spec"])), "count": 2})
    return made


def _finished(kueue: Kueue, ns: str, name: str) -> dict[str, Any] | None:
    wl = kueue.get(WORKLOADS, name, ns)
    cond = condition(wl, "Finished")
    return wl if cond and cond["status"] == "True" else None


def test_a_prebuilt_group_workload_runs_its_group_and_one_out_of_sync_is_finished_not_replaced(
        pod_kueue: Kueue, ns: str) -> None:
    """Group `fits`: its Workload made for two 500m members, the members are 500m: both run from it and
    own it. Group `other`: its Workload made for 500m members, the members ask 250m (another role): the
    Workload is finished OutOfSync with upstream's message, keeps its UID (not deleted and made anew),
    and its members stay gated."""
    two_gpu_queues(pod_kueue, ns)
    pod_kueue.apply([_group_workload(ns, "fits", "500m"), _group_workload(ns, "other", "500m")])
    made = {n: pod_kueue.get(WORKLOADS, n, ns)["metadata"]["uid"] for n in ("fits", "other")}
    pod_kueue.apply([_member(n, ns, "fits", "500m", prebuilt=True) for n in ("fits-a", "fits-b")]
                    + [_member(n, ns, "other", "250m", prebuilt=True) for n in ("other-a", "other-b")])

    wl = eventually(lambda: _finished(pod_kueue, ns, "other"), 90, what="`other` finished")
    finished = condition(wl, "Finished")
    assert (finished["reason"], finished["message"]) == (
        "OutOfSync", "The prebuilt workload is out of sync with its user job")
    assert wl["metadata"]["uid"] == made["other"]

    for name in ("fits-a", "fits-b"):
        eventually(lambda name=name: running_on_gpu(pod_kueue, name, ns), 90, what=f"{name} running")
    fits = pod_kueue.get(WORKLOADS, "fits", ns)
    assert fits["metadata"]["uid"] == made["fits"] and condition(fits, "Finished") is None
    assert sorted(o["name"] for o in fits["metadata"].get("ownerReferences") or []) == ["fits-a", "fits-b"]
    assert all(gated(get_pod(pod_kueue, n, ns)) for n in ("other-a", "other-b"))
    assert sorted(w["metadata"]["name"] for w in pod_kueue.items(WORKLOADS, ns)) == ["fits", "other"]


def _relabel(kueue: Kueue, ns: str, selector: str, *labels: str) -> None:
    result = kueue.cluster.kubectl("label", "pod", "-n", ns, "-l", selector, *labels, "--overwrite", check=False)
    assert result.returncode == 0, result.stderr


def test_a_gated_pod_group_relabelled_to_another_queue_moves_its_workload_in_place(pod_kueue: Kueue, ns: str) -> None:
    """Two 1 cpu members in `lq` (1 cpu): their Workload waits. Both relabelled `big` (4 cpu): the same
    Workload (same UID) names `big`, is admitted by NS-big and both members run."""
    two_gpu_queues(pod_kueue, ns)
    pod_kueue.apply([_member(n, ns, "grp", "1") for n in ("grp-a", "grp-b")])
    waiting = eventually(lambda: (w := pod_kueue.get(WORKLOADS, "grp", ns))
                         and (c := condition(w, "QuotaReserved")) and c["status"] == "False" and w,
                         60, what="grp pending in lq")
    assert waiting["spec"]["queueName"] == "lq"
    _relabel(pod_kueue, ns, f"{GROUP_NAME_LABEL}=grp", f"{QUEUE}=big")
    for name in ("grp-a", "grp-b"):
        eventually(lambda name=name: running_on_gpu(pod_kueue, name, ns), 90, what=f"{name} running from big")
    moved = pod_kueue.get(WORKLOADS, "grp", ns)
    assert moved["metadata"]["uid"] == waiting["metadata"]["uid"]  # moved in place, not replaced
    assert moved["spec"]["queueName"] == "big"
    assert moved["status"]["admission"]["clusterQueue"] == f"{ns}-big"
