"""Elastic Jobs through workload slices (upstream's ElasticJobsViaWorkloadSlices, on by default), live on the
dev cluster with the controller's webhooks: a Job annotated ``kueue.x-k8s.io/elastic-job: "true"``
changes its parallelism while admitted and is never suspended for it.

One Job of 1-cpu pods in a 4-cpu ClusterQueue, worked by hand: 2 pods admitted; scaled up to 3, a new
slice needs 1 more cpu, is admitted, and the first slice is finished ``WorkloadSliceReplaced`` (the
queue then holds 3, not 2 + 3); scaled down to 1, the admitted slice shrinks in place (the same
Workload, 1 cpu held); scaled up to 6, a slice that can never fit 4 cpu waits while the Job runs on at
its admitted size, its extra pods held at the ``kueue.x-k8s.io/elastic-job`` scheduling gate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.elastic_objects import GATE, gated, reserved_cpu
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, job, local_queue
from tests.scenario_harness import simulate

pytestmark = pytest.mark.e2e


@pytest.fixture
def hooks(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def slices(kueue: Kueue, ns: str) -> list[dict[str, Any]]:
    return [w for w in kueue.items("workloads.kueue.x-k8s.io", ns)
            if any(o.get("name") == "grow" for o in w["metadata"].get("ownerReferences") or [])]


def admitted_slice(kueue: Kueue, ns: str, count: int) -> dict[str, Any] | None:
    for w in slices(kueue, ns):
        if is_true(w, "Admitted") and not is_true(w, "Finished") and w["spec"]["podSets"][0]["count"] == count:
            return w
    return None


def scale(kueue: Kueue, ns: str, pods: int) -> None:
    kueue.cluster.kubectl("patch", "job", "grow", "-n", ns, "--type=merge",
                          "-p", json.dumps({"spec": {"parallelism": pods}}))


def never_suspended(kueue: Kueue, ns: str) -> None:
    obj = kueue.get("job", "grow", ns)
    assert obj is not None and obj["spec"].get("suspend") is False, obj and obj["spec"]
    assert not (obj.get("metadata") or {}).get("annotations", {}).get("kueue.x-k8s.io/stopping")


def gated_pods(kueue: Kueue, ns: str) -> int:
    return sum(gated(p) for p in kueue.items("pods", ns))


def test_an_elastic_job_scales_through_workload_slices(hooks: Kueue, ns: str) -> None:
    kueue = hooks
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    manifest = yaml.safe_load(job("grow", ns, "1", pods=2))
    manifest["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    manifest["spec"]["completions"] = 20
    kueue.apply([manifest])
    first = eventually(lambda: admitted_slice(kueue, ns, 2), 90, what="the first slice admitted")
    eventually(lambda: ((kueue.get("job", "grow", ns) or {}).get("status") or {}).get("ready") == 2, 90,
               what="2 pods running (ungated)")
    assert (kueue.get("job", "grow", ns) or {})["spec"]["template"]["spec"]["schedulingGates"] == [{"name": GATE}]
    eventually(lambda: reserved_cpu(kueue, ns) == "2", 60, what="2 cpu reserved (the status is written within 1 s)")

    # scale up to 3: 1 cpu more is free; the new slice replaces the first
    scale(kueue, ns, 3)
    second = eventually(lambda: admitted_slice(kueue, ns, 3), 90, what="the scale-up slice admitted")
    assert second["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-replacement-for"] == \
        f"{ns}/{first['metadata']['name']}"
    old = eventually(lambda: next((w for w in slices(kueue, ns) if w["metadata"]["uid"] == first["metadata"]["uid"]
                                   and is_true(w, "Finished")), None), 60, what="the first slice finished")
    assert condition(old, "Finished")["reason"] == "WorkloadSliceReplaced"  # type: ignore[index]
    eventually(lambda: reserved_cpu(kueue, ns) == "3", 60, what="3 cpu reserved, not 2 + 3")
    eventually(lambda: ((kueue.get("job", "grow", ns) or {}).get("status") or {}).get("ready") == 3, 90,
               what="the third pod running")
    never_suspended(kueue, ns)

    # scale down to 1: the admitted slice shrinks in place
    scale(kueue, ns, 1)
    eventually(lambda: reserved_cpu(kueue, ns) == "1", 60, what="1 cpu reserved after the scale-down")
    shrunk = admitted_slice(kueue, ns, 1)
    assert shrunk is not None and shrunk["metadata"]["uid"] == second["metadata"]["uid"]
    never_suspended(kueue, ns)

    # scale up to 6: 6 cpu never fit 4; the slice waits and the Job runs on at 1
    scale(kueue, ns, 6)
    waiting = eventually(lambda: next((w for w in slices(kueue, ns) if w["spec"]["podSets"][0]["count"] == 6
                                       and condition(w, "QuotaReserved") is not None), None),
                         60, what="the 6-pod slice answered")
    assert not is_true(waiting, "QuotaReserved"), condition(waiting, "QuotaReserved")
    eventually(lambda: gated_pods(kueue, ns) == 5, 60, what="the 5 new pods held at the elastic-job gate")
    assert admitted_slice(kueue, ns, 1) is not None
    assert reserved_cpu(kueue, ns) == "1"
    never_suspended(kueue, ns)


def _slice_states_live(kueue: Kueue, ns: str, name: str) -> list[tuple[str, int]]:
    owned = [w for w in kueue.items("workloads.kueue.x-k8s.io", ns)
             if any(o.get("name") == name for o in w["metadata"].get("ownerReferences") or [])]
    # In the order of the replacement chain (each slice names the one it replaces): creation timestamps
    # have whole seconds, and slices made within one second tie.
    replaces = {w["metadata"]["name"]: ((w["metadata"].get("annotations") or {}).get(
        "kueue.x-k8s.io/workload-slice-replacement-for") or "").rpartition("/")[2] for w in owned}

    def depth(name: str) -> int:
        seen = 0
        while replaces.get(name) in replaces and seen <= len(replaces):
            name, seen = replaces[name], seen + 1
        return seen

    owned.sort(key=lambda w: (depth(w["metadata"]["name"]), w["metadata"]["creationTimestamp"]))
    return [("Finished" if is_true(w, "Finished") else "Admitted" if is_true(w, "Admitted") else "Pending",
             w["spec"]["podSets"][0]["count"]) for w in owned]


def test_simulate_agrees_with_the_controller_on_an_elastic_job(hooks: Kueue, ns: str, tmp_path: Any) -> None:
    """One elastic Job scaled 2 -> 3 -> 6 -> 1 in a 4-cpu queue, through ``simulate`` (timed changes) and
    live: the same slices, in order, end in the same states (2 and 3 replaced, the 6-pod slice followed
    the Job down to 1 and was admitted)."""
    kueue = hooks
    sizes = [2, 3, 6, 1]
    base = yaml.safe_load(job("agree", ns, "1", pods=2))
    base["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    base["spec"]["completions"] = 20
    docs = [yaml.safe_load(PLAIN_FLAVOR), yaml.safe_load(cluster_queue(ns, "4")), yaml.safe_load(local_queue(ns, ns))]
    for i, size in enumerate(sizes):
        changed = json.loads(json.dumps(base))
        changed["spec"]["parallelism"] = size
        if i:
            changed["metadata"]["annotations"]["pykueue.dev/at"] = f"{10 * i}s"
        docs.append(changed)
    code, result, stderr = simulate(yaml.safe_dump_all(docs, sort_keys=False), tmp_path)
    assert code == 0 and result is not None, stderr
    predicted = [(w["state"], w["admission"]["podSetAssignments"][0]["count"] if w["admission"] else None)
                 for w in result["workloads"] if w["name"].split("#")[0] == "agree"]
    assert predicted == [("Finished", 2), ("Finished", 3), ("Admitted", 1)], predicted

    kueue.apply(docs[:3])
    kueue.apply([base])
    eventually(lambda: admitted_slice_of(kueue, ns, "agree", 2), 90, what="2 admitted")
    kueue.cluster.kubectl("patch", "job", "agree", "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":3}}')
    eventually(lambda: admitted_slice_of(kueue, ns, "agree", 3), 90, what="3 admitted")
    kueue.cluster.kubectl("patch", "job", "agree", "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":6}}')
    eventually(lambda: ("Pending", 6) in _slice_states_live(kueue, ns, "agree")
               and any(condition(w, "QuotaReserved") is not None and w["spec"]["podSets"][0]["count"] == 6
                       for w in kueue.items("workloads.kueue.x-k8s.io", ns)), 60, what="the 6-pod slice answered")
    kueue.cluster.kubectl("patch", "job", "agree", "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":1}}')
    live = eventually(lambda: (s := _slice_states_live(kueue, ns, "agree")) == predicted and s, 90,
                      what=f"the live slices as simulate predicts: {predicted}")
    assert live == predicted


def admitted_slice_of(kueue: Kueue, ns: str, name: str, count: int) -> bool:
    return (_slice_states_live(kueue, ns, name) or [("", 0)])[-1] == ("Admitted", count)
