"""LeaderWorkerSet live, on the tier-2 cluster with LWS's real controller (the ``lws`` addon, built from
its source archive): Kueue's webhook marks both pod templates, pykueue's controller makes one Workload
per group, LWS's StatefulSets make the Pods gated, and each group's Pods are released once its own
Workload is admitted, on its flavor.

Each behaviour is upstream's (site/content/en/docs/tasks/run/leaderworkerset.md, test/e2e/singlecluster/
leaderworkerset_test.go): a Workload per group with pod sets leader and worker; a group that does not fit
waits gated while another runs; scaling down deletes the gone group's Workload and scaling up makes the
new group's; only the LeaderCreated startup policy with a queue; a template's resources are fixed, its
image rolls out into the admitted group.

The module starts the addon on the session's cluster and runs its own controller with the LWS
integration and its webhooks on, as the JobSet module does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import gpu_queue, priority_classes, refused, scenario_in_namespace

pytestmark = pytest.mark.e2e
GPU_SELECTOR = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
GATE = {"name": "kueue.x-k8s.io/admission"}
LWS_RESOURCE = "leaderworkerset.leaderworkerset.x-k8s.io"


@pytest.fixture
def lws_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def leaderworkerset(name: str, ns: str, *, replicas: int = 2, size: int = 3, cpu: str = "1",
                    image: str = "nginx", priority_class: str | None = None) -> dict[str, Any]:
    """``replicas`` groups of a leader and ``size - 1`` workers, ``cpu`` each."""
    def template(role: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": role, "image": image, "resources": {"requests": {"cpu": cpu}}}]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        return {"spec": spec}

    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": size, "leaderTemplate": template("leader"), "workerTemplate": template("worker")}}}


def group_workloads(kueue: Kueue, ns: str, name: str) -> dict[str, dict[str, Any]]:
    """The LWS's Workloads by group index (read from the name ``leaderworkerset-NAME-INDEX-hash``)."""
    out = {}
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        if any(o.get("kind") == "LeaderWorkerSet" and o.get("name") == name
               for o in wl["metadata"].get("ownerReferences") or []):
            out[wl["metadata"]["name"].rsplit("-", 2)[1]] = wl
    return out


def group_pods(kueue: Kueue, ns: str, name: str, group: str) -> list[dict[str, Any]]:
    out = kueue.cluster.kubectl("get", "pods", "-n", ns, "-l", f"leaderworkerset.sigs.k8s.io/name={name},"
                                f"leaderworkerset.sigs.k8s.io/group-index={group}", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def running(pods: list[dict[str, Any]], count: int) -> list[dict[str, Any]] | None:
    ok = len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
    return pods if ok else None


def test_each_group_is_its_own_workload_and_is_released_alone(lws_kueue: Kueue, ns: str) -> None:
    """5 cpu on the H100 flavor; an LWS of 2 groups of a leader and 2 workers, 1 cpu each (3 cpu a
    group). Two Workloads leaderworkerset-infer-0/1-<hash>, each with pod sets leader x1, worker x2 and
    owned by the LWS; one group is admitted and its 3 Pods run ungated on the flavor's node selector;
    the other does not fit (6 > 5): its Workload says what is missing and its Pods stay gated."""
    gpu_queue(lws_kueue, ns, "5")
    lws_kueue.apply([leaderworkerset("infer", ns)])
    wls = eventually(lambda: (found := group_workloads(lws_kueue, ns, "infer")) and len(found) == 2 and found,
                     90, what="a workload per group")
    assert sorted(wls) == ["0", "1"]
    for wl in wls.values():
        assert wl["metadata"]["name"].startswith("leaderworkerset-infer-")
        assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
        assert wl["spec"]["queueName"] == "lq"

    def one_admitted() -> tuple[str, str] | None:
        found = group_workloads(lws_kueue, ns, "infer")
        admitted = [g for g, w in found.items() if is_true(w, "Admitted")]
        waiting = [g for g, w in found.items() if (c := condition(w, "QuotaReserved")) and c["status"] == "False"]
        return (admitted[0], waiting[0]) if len(admitted) == 1 and len(waiting) == 1 else None

    admitted, waiting = eventually(one_admitted, 120, what="one group admitted, the other pending")
    pods = eventually(lambda: running(group_pods(lws_kueue, ns, "infer", admitted), 3), 120,
                      what="the admitted group's 3 pods running")
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == GPU_SELECTOR
        assert GATE not in (pod["spec"].get("schedulingGates") or [])
    roles = sorted(p["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] for p in pods)
    assert roles == ["leader", "worker", "worker"]
    message = condition(group_workloads(lws_kueue, ns, "infer")[waiting], "QuotaReserved")["message"]
    assert "cpu in flavor gpu-h100" in message
    held = eventually(lambda: (found := group_pods(lws_kueue, ns, "infer", waiting)) and len(found) == 3 and found,
                      90, what="the waiting group's pods")
    assert all(GATE in (p["spec"].get("schedulingGates") or []) for p in held)
    # the Pods are their groups' only: none was ever queued as a Pod of its own before it was labelled
    assert sorted(w["metadata"]["name"] for w in lws_kueue.items("workloads.kueue.x-k8s.io", ns)) == sorted(
        w["metadata"]["name"] for w in group_workloads(lws_kueue, ns, "infer").values())


def test_scaling_down_deletes_the_gone_groups_workload_and_up_makes_the_new_ones(lws_kueue: Kueue, ns: str) -> None:
    """An LWS of 3 groups of 2 pods, 1 cpu each, in 6 cpu: three Workloads, all admitted. Scaled to 1,
    groups 1 and 2 lose their Workloads; scaled to 2, group 1 has a new one, admitted, and runs."""
    gpu_queue(lws_kueue, ns, "6")
    lws_kueue.apply([leaderworkerset("scale", ns, replicas=3, size=2)])
    eventually(lambda: (found := group_workloads(lws_kueue, ns, "scale")) and len(found) == 3
               and all(is_true(w, "Admitted") for w in found.values()), 120, what="three groups admitted")
    lws_kueue.cluster.kubectl("patch", LWS_RESOURCE, "scale", "-n", ns, "--type=merge", "-p", '{"spec":{"replicas":1}}')
    eventually(lambda: sorted(group_workloads(lws_kueue, ns, "scale")) == ["0"], 90, what="groups 1 and 2's workloads deleted")
    lws_kueue.cluster.kubectl("patch", LWS_RESOURCE, "scale", "-n", ns, "--type=merge", "-p", '{"spec":{"replicas":2}}')
    eventually(lambda: (found := group_workloads(lws_kueue, ns, "scale")) and sorted(found) == ["0", "1"]
               and is_true(found["1"], "Admitted"), 90, what="group 1's new workload admitted")
    eventually(lambda: running(group_pods(lws_kueue, ns, "scale", "1"), 2), 120, what="group 1's pods running")


def test_a_leader_ready_group_runs_and_a_template_keeps_resources_but_rolls_an_image(lws_kueue: Kueue,
                                                                                     ns: str) -> None:
    """LeaderReady with a queue is allowed (v0.18): its group's Workload is admitted, the leader runs,
    then LWS makes the workers, whose Pods join the admitted Workload and run. A running group's
    template keeps its cpu (refused), but a new image is accepted and LWS's rolling update replaces the
    group's Pods, which join the admitted Workload and run ungated with the new image."""
    gpu_queue(lws_kueue, ns, "4")
    ready = leaderworkerset("ready", ns, replicas=1, size=2)
    ready["spec"]["startupPolicy"] = "LeaderReady"
    lws_kueue.apply([ready])
    eventually(lambda: running(group_pods(lws_kueue, ns, "ready", "0"), 2), 180, what="the LeaderReady group running")
    (admitted,) = group_workloads(lws_kueue, ns, "ready").values()
    assert is_true(admitted, "Admitted")
    lws_kueue.apply([leaderworkerset("roll", ns, replicas=1, size=2)])
    eventually(lambda: running(group_pods(lws_kueue, ns, "roll", "0"), 2), 120, what="roll's group running")
    bigger = lws_kueue.cluster.kubectl(
        "patch", LWS_RESOURCE, "roll", "-n", ns, "--type=json", "-p", json.dumps([{"op": "replace", "path":
            "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/resources/requests/cpu", "value": "2"}]),
        check=False)
    refused(bigger, "vleaderworkerset.kb.io", "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]")
    (before,) = group_workloads(lws_kueue, ns, "roll").values()
    lws_kueue.cluster.kubectl("patch", LWS_RESOURCE, "roll", "-n", ns, "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image", "value": "nginx:2"},
        {"op": "replace", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/image", "value": "nginx:2"}]))

    def rolled() -> list[dict[str, Any]] | None:
        pods = running(group_pods(lws_kueue, ns, "roll", "0"), 2)
        return pods if pods and all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in pods) else None

    pods = eventually(rolled, 180, what="roll's group rolled to nginx:2")
    assert all(GATE not in (p["spec"].get("schedulingGates") or []) for p in pods)
    (after,) = group_workloads(lws_kueue, ns, "roll").values()
    assert after["metadata"]["uid"] == before["metadata"]["uid"] and is_true(after, "Admitted")


def test_a_workload_priority_class_orders_the_groups(lws_kueue: Kueue, ns: str) -> None:
    """The PriorityClass a template names is each group's Workload's priority (upstream's
    ExtractPriority: the first pod set naming one)."""
    lws_kueue.apply(priority_classes(ns))
    gpu_queue(lws_kueue, ns, "2")
    lws_kueue.apply([leaderworkerset("prio", ns, replicas=1, size=2, priority_class=f"{ns}-high")])
    (wl,) = eventually(lambda: list(group_workloads(lws_kueue, ns, "prio").values()) or None, 90, what="prio's workload")
    assert wl["spec"]["priorityClassRef"]["name"] == f"{ns}-high"
    high = json.loads(lws_kueue.cluster.kubectl("get", "priorityclass", f"{ns}-high", "-o", "json").stdout)["value"]
    assert wl["spec"]["priority"] == high


def test_simulate_predicts_each_groups_admission(lws_kueue: Kueue, ns: str, tmp_path) -> None:
    """tests/scenarios/integration_leaderworkerset.yaml through `simulate`, then live (its ClusterQueue
    named after this test, in its namespace): each group's Workload is admitted with the pod sets,
    counts and flavors simulate predicted for the group of the same index (groups are admitted in
    turn, so which group takes flavor small is compared as a set of assignments)."""
    from tests.scenario_harness import SCENARIOS, simulate, split

    _, text = split(SCENARIOS / "integration_leaderworkerset.yaml")
    code, predicted, err = simulate(text, tmp_path)
    assert code == 0 and predicted is not None, err
    expected = sorted((w["admission"]["podSetAssignments"] for w in predicted["workloads"]
                       if w["kind"] == "LeaderWorkerSet"), key=json.dumps)
    assert len(expected) == 2
    docs = scenario_in_namespace(text, ns)
    lws_kueue.apply(docs)

    def admitted() -> list[dict[str, Any]] | None:
        found = list(group_workloads(lws_kueue, ns, "infer").values())
        return found if len(found) == 2 and all(is_true(w, "Admitted") for w in found) else None

    got = sorted(([{"name": a["name"], "count": a["count"], "flavors": a["flavors"]}
                   for a in w["status"]["admission"]["podSetAssignments"]] for w in eventually(
                      admitted, 120, what="both groups admitted")), key=json.dumps)
    assert got == expected


def test_a_rolling_update_with_max_surge_queues_the_surge_group(lws_kueue: Kueue, ns: str) -> None:
    """2 groups of 2 pods, 1 cpu each, with maxSurge 1 in 6 cpu (room for 3 groups). A new image makes
    LWS add a surge group (index 2, status.replicas 3 above spec.replicas 2): it gets a Workload of its
    own, admitted, so its Pods are released and the rollout goes on; once every group runs the new
    image the surge group is gone and so is its Workload."""
    gpu_queue(lws_kueue, ns, "6")
    obj = leaderworkerset("surge", ns, replicas=2, size=2)
    obj["spec"]["rolloutStrategy"] = {"type": "RollingUpdate",
                                      "rollingUpdateConfiguration": {"maxSurge": 1, "maxUnavailable": 1}}
    lws_kueue.apply([obj])
    for group in ("0", "1"):
        eventually(lambda g=group: running(group_pods(lws_kueue, ns, "surge", g), 2), 120, what=f"group {group} running")
    lws_kueue.cluster.kubectl("patch", LWS_RESOURCE, "surge", "-n", ns, "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image", "value": "nginx:2"},
        {"op": "replace", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/image", "value": "nginx:2"}]))
    surge = eventually(lambda: group_workloads(lws_kueue, ns, "surge").get("2"), 60, interval=0.1,
                       what="the surge group's workload")
    assert [(p["name"], p["count"]) for p in surge["spec"]["podSets"]] == [("leader", 1), ("worker", 1)]

    def rolled() -> bool:
        pods = [p for g in ("0", "1") for p in group_pods(lws_kueue, ns, "surge", g)]
        return bool(running(pods, 4)) and all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in pods)

    eventually(rolled, 240, what="both groups rolled to nginx:2")
    eventually(lambda: sorted(group_workloads(lws_kueue, ns, "surge")) == ["0", "1"], 120,
               what="the surge group's workload deleted")


def test_a_preempted_group_is_gated_again_and_the_higher_one_runs(lws_kueue: Kueue, ns: str) -> None:
    """Priority preemption in 2 cpu: low (1 group of 2 pods, 1 cpu each) runs; high, the same at a
    higher PriorityClass, evicts low's group: low's Pods are stopped and LWS's controller makes them
    again, gated, while high's group runs on the flavor."""
    lws_kueue.apply(priority_classes(ns))
    gpu_queue(lws_kueue, ns, "2", preemption="{withinClusterQueue: LowerPriority}")
    lws_kueue.apply([leaderworkerset("low", ns, replicas=1, size=2, priority_class=f"{ns}-low")])
    eventually(lambda: running(group_pods(lws_kueue, ns, "low", "0"), 2), 120, what="low's group running")
    lws_kueue.apply([leaderworkerset("high", ns, replicas=1, size=2, priority_class=f"{ns}-high")])
    pods = eventually(lambda: running(group_pods(lws_kueue, ns, "high", "0"), 2), 120, what="high's group running")
    assert all(p["spec"]["nodeSelector"] == GPU_SELECTOR for p in pods)
    (low,) = group_workloads(lws_kueue, ns, "low").values()
    assert not is_true(low, "Admitted")
    eventually(lambda: (found := group_pods(lws_kueue, ns, "low", "0")) and all(
        GATE in (p["spec"].get("schedulingGates") or []) for p in found), 120, what="low's pods gated again")


def test_a_template_naming_another_queue_and_a_queue_changed_before_any_group_is_ready(lws_kueue: Kueue,
                                                                                       ns: str) -> None:
    """Upstream's specs "should admit and evict correctly when queue-name is set on pod templates" and
    "should allow to change queue-name if ReadyReplicas=0", read and worked out here. An LWS in ``lq``
    whose worker template says ``user-queue`` (no such LocalQueue): the webhook stamps ``lq`` onto both
    templates, so its group's Pods join its Workload in ``lq`` and run (before: they stayed gated). An LWS
    queued in a LocalQueue that does not exist waits; relabelled to ``lq`` while no group is ready, its
    group's Workload moves there and is admitted, and its Pods run."""
    gpu_queue(lws_kueue, ns, "4")
    stamped = leaderworkerset("stamped", ns, replicas=1, size=2)
    stamped["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}
    lws_kueue.apply([stamped])
    got = lws_kueue.get(LWS_RESOURCE, "stamped", ns)
    assert got is not None
    for role in ("leaderTemplate", "workerTemplate"):
        assert got["spec"]["leaderWorkerTemplate"][role]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
    eventually(lambda: (found := group_workloads(lws_kueue, ns, "stamped")) and is_true(found["0"], "Admitted"),
               120, what="the stamped LWS's group admitted")
    eventually(lambda: running(group_pods(lws_kueue, ns, "stamped", "0"), 2), 120, what="its pods running")

    moved = leaderworkerset("moved", ns, replicas=1, size=2)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq-invalid"
    lws_kueue.apply([moved])
    waiting = eventually(lambda: (found := group_workloads(lws_kueue, ns, "moved")) and (
        c := condition(found["0"], "QuotaReserved")) and c["status"] == "False" and found["0"], 90,
        what="the moved LWS's group waiting for a LocalQueue that does not exist")
    assert waiting["spec"]["queueName"] == "lq-invalid"
    lws_kueue.cluster.kubectl("label", LWS_RESOURCE, "moved", "-n", ns, "kueue.x-k8s.io/queue-name=lq", "--overwrite")
    eventually(lambda: (found := group_workloads(lws_kueue, ns, "moved")) and found["0"]["spec"]["queueName"] == "lq"
               and is_true(found["0"], "Admitted"), 120, what="its group's Workload moved to lq and admitted")
    eventually(lambda: running(group_pods(lws_kueue, ns, "moved", "0"), 2), 120, what="the moved LWS's pods running")
