"""The pod integration live, on the tier-2 cluster: plain Pods, pod groups, Deployments and StatefulSets,
gated by the controller's own webhook and released by admission, as upstream's pod integration does.

The module stops the session's controller and runs its own with ``integrations.frameworks`` naming every
kind and its webhooks on (registered for its loopback URL); afterwards the session's controller runs again.
Pods are real: kube-scheduler binds the released ones and kwok runs them (a plain Pod runs until the test
ends it as a kubelet would, by setting its phase); the Deployment's and StatefulSet's Pods are made by the
real kube-controller-manager.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.controller.webhooks import local, names
from pykueue.jobs.pod import groups as pod_rules
from pykueue.jobs.statefulset import workload as statefulset_rules
from tests.e2e.conftest import INTEGRATIONS_CONFIG as CONFIG
from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.objects import cluster_queue, events, gpu_queue, priority_classes
from tests.e2e.pod_objects import (
    GPU_NODE,
    gated,
    get_pod,
    pending_message,
    pod,
    running_on_gpu,
    sts_workload,
    succeed,
    workload_for,
)

pytestmark = pytest.mark.e2e


def test_plain_pod_gated_released_on_its_flavor_and_finished(pod_kueue: Kueue, ns: str) -> None:
    """2 cpu on the H100 flavor. A 2 cpu Pod is admitted: its gate goes, the flavor's node selector and
    toleration come on, and it runs on the H100 node; a 1 cpu Pod stays gated with its Workload's
    message. When the first succeeds its Workload finishes, its finalizer goes, and the second runs."""
    gpu_queue(pod_kueue, ns, "2")
    pod_kueue.apply([pod("first", ns, "2")])
    created = get_pod(pod_kueue, "first", ns)
    assert created is not None and pod_rules.FINALIZER in created["metadata"]["finalizers"]
    assert created["metadata"]["labels"][pod_rules.MANAGED_LABEL] == "true"
    first = eventually(lambda: running_on_gpu(pod_kueue, "first", ns), 90, what="first running on the H100 node")
    assert first["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in first["spec"]["tolerations"]
    wl = workload_for(pod_kueue, ns, "first")
    assert wl is not None and wl["metadata"]["name"] == pod_rules.workload_name_for_pod("first", first["metadata"]["uid"])
    assert wl["spec"]["podSets"][0]["count"] == 1

    pod_kueue.apply([pod("second", ns, "1")])
    message = eventually(lambda: pending_message(pod_kueue, ns, "second"), 60, what="second's pending message")
    assert "insufficient unused quota for cpu in flavor gpu-h100, 1 more needed" in message
    assert gated(get_pod(pod_kueue, "second", ns))

    succeed(pod_kueue, "first", ns)
    eventually(lambda: is_true(workload_for(pod_kueue, ns, "first"), "Finished")
               or workload_for(pod_kueue, ns, "first") is None, 60, what="first's workload finished")
    eventually(lambda: pod_rules.FINALIZER not in ((get_pod(pod_kueue, "first", ns) or {"metadata": {}})
                                                  ["metadata"].get("finalizers") or []), 60, what="finalizer removed")
    eventually(lambda: running_on_gpu(pod_kueue, "second", ns), 90, what="second running")


def test_preempted_pod_is_terminated_and_its_quota_freed(pod_kueue: Kueue, ns: str) -> None:
    """Priority preemption of a running plain Pod: it is marked TerminationTarget and deleted (a Pod
    cannot be suspended again), its Workload goes with it, and the preemptor runs."""
    pod_kueue.apply(priority_classes(ns))
    gpu_queue(pod_kueue, ns, "2", preemption="{withinClusterQueue: LowerPriority}")
    pod_kueue.apply([pod("low", ns, "2", priority_class=f"{ns}-low")])
    eventually(lambda: running_on_gpu(pod_kueue, "low", ns), 90, what="low running")
    low_uid = get_pod(pod_kueue, "low", ns)["metadata"]["uid"]
    pod_kueue.apply([pod("high", ns, "2", priority_class=f"{ns}-high")])
    eventually(lambda: running_on_gpu(pod_kueue, "high", ns), 120, what="high running")
    eventually(lambda: (p := get_pod(pod_kueue, "low", ns)) is None or p["metadata"]["uid"] != low_uid,
               90, what="low deleted")
    eventually(lambda: workload_for(pod_kueue, ns, "low") is None, 90, what="low's workload gone")
    events = pod_kueue.cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout
    assert any(e.get("reason") == "Preempted" for e in json.loads(events)["items"])

    def stopped_events() -> list[dict[str, Any]]:
        listed = pod_kueue.cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout
        return [e for e in json.loads(listed)["items"] if e.get("reason") == "Stopped"]

    stopped = eventually(stopped_events, 30, what="the Stopped event")
    # on the preempted Pod only (once per stop write: a reconcile before the cache shows it deleting repeats it)
    assert {(e["involvedObject"]["kind"], e["involvedObject"]["uid"]) for e in stopped} == {("Pod", low_uid)}
    assert stopped[0]["message"].startswith("Preempted to accommodate")


def test_pod_group_is_admitted_whole_or_not_at_all(pod_kueue: Kueue, ns: str) -> None:
    """A group of two 2 cpu Pods in a 3 cpu queue: one Workload named as the group, never admitted, and
    no Pod of it passes the gate; with 4 cpu both are released together."""
    gpu_queue(pod_kueue, ns, "3")
    members = [pod(f"member-{i}", ns, "2", labels={pod_rules.GROUP_NAME_LABEL: "team"},
                   annotations={pod_rules.GROUP_TOTAL_COUNT: "2"}) for i in range(2)]
    pod_kueue.apply(members[:1])
    pod_kueue.apply(members[1:])
    wl = eventually(lambda: pod_kueue.get("workloads.kueue.x-k8s.io", "team", ns), 60, what="the group's workload")
    assert [p["count"] for p in wl["spec"]["podSets"]] == [2]
    message = eventually(lambda: (c := condition(pod_kueue.get("workloads.kueue.x-k8s.io", "team", ns),
                                                 "QuotaReserved")) and c["status"] == "False" and c["message"],
                         60, what="the group's pending message")
    role = wl["spec"]["podSets"][0]["name"]  # the members' role hash
    assert message == (f"couldn't assign flavors to pod set {role}: insufficient quota for cpu in flavor "
                       "gpu-h100, request > maximum capacity")
    assert all(gated(get_pod(pod_kueue, f"member-{i}", ns)) for i in range(2))
    pod_kueue.apply(cluster_queue(ns, "4", flavor="gpu-h100"))
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"member-{i}", ns), 90, what=f"member-{i} running")


def test_deployment_pods_queue_one_by_one(pod_kueue: Kueue, ns: str) -> None:
    """A Deployment of three 1 cpu replicas in a 2 cpu queue: each Pod is a Workload of its own, two
    run on the H100 node and the third stays gated with its Workload's message."""
    gpu_queue(pod_kueue, ns, "2")
    pod_kueue.apply(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
""")
    deployment = pod_kueue.get("deployment", "web", ns)
    template = deployment["spec"]["template"]["metadata"]
    assert template["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
    assert template["annotations"][pod_rules.SUSPENDED_BY_PARENT] == "deployment"

    def split() -> tuple[int, int] | None:
        items = [p for p in pod_kueue.items("pods", ns) if (p["metadata"].get("labels") or {}).get("app") == "web"]
        running = [p for p in items if not pod_rules.gated(p) and p["spec"].get("nodeName") == GPU_NODE
                   and (p.get("status") or {}).get("phase") == "Running"]
        waiting = [p for p in items if pod_rules.gated(p)]
        return (len(running), len(waiting)) if len(running) == 2 and len(waiting) == 1 else None

    eventually(split, 120, what="two replicas running, one gated")
    workloads = pod_kueue.items("workloads.kueue.x-k8s.io", ns)
    assert len(workloads) == 3 and all(w["metadata"]["name"].startswith("pod-web-") for w in workloads)
    pending = [w for w in workloads if (c := condition(w, "QuotaReserved")) and c["status"] == "False"]
    assert len(pending) == 1 and "1 more needed" in condition(pending[0], "QuotaReserved")["message"]


def test_statefulset_is_one_group_admitted_at_its_first_pod(pod_kueue: Kueue, ns: str) -> None:
    """A StatefulSet of three 1 cpu replicas: one Workload (statefulset-NAME-<hash with its UID>) for all three, admitted
    as soon as its first Pod exists (fast admission), so the StatefulSet controller's one-at-a-time
    creation goes on and every replica runs; one that does not fit keeps its first Pod gated and makes
    no more."""
    gpu_queue(pod_kueue, ns, "3")
    sts = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 3
  serviceName: {name}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""
    pod_kueue.apply(sts.format(name="db", ns=ns, cpu="1"))
    group = sts_workload(pod_kueue, "db", ns)
    for i in range(3):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"db-{i}", ns), 180, what=f"db-{i} running")
    wl = pod_kueue.get("workloads.kueue.x-k8s.io", group, ns)
    assert wl is not None and [p["count"] for p in wl["spec"]["podSets"]] == [3] and is_true(wl, "Admitted")

    pod_kueue.apply(sts.format(name="big", ns=ns, cpu="2"))
    big = sts_workload(pod_kueue, "big", ns)
    eventually(lambda: (c := condition(pod_kueue.get("workloads.kueue.x-k8s.io", big, ns), "QuotaReserved"))
               and c["status"] == "False", 60, what="big pending")
    assert gated(get_pod(pod_kueue, "big-0", ns))
    assert get_pod(pod_kueue, "big-1", ns) is None


def test_local_registration_includes_the_pod_hooks(pod_kueue: Kueue) -> None:
    """The controller registered a hook for each kind it queues (names.mutating_for)."""
    mutating, _ = names.configuration_names(names.SERVICE)
    config = json.loads(pod_kueue.cluster.kubectl("get", "mutatingwebhookconfiguration", mutating, "-o", "json").stdout)
    assert local.is_ours(config)
    assert [w["name"] for w in config["webhooks"]] == [h.name for h in names.mutating_for(
        tuple(CONFIG["integrations"]["frameworks"]))]


# ---- simulate agrees with the controller, for every kind ----------------------------------------------


def _predicted_by_object(result: dict[str, Any]) -> dict[tuple[str, str], list[tuple[str, dict[str, str]]]]:
    """simulate's result per submitted object (a Deployment's replicas, d-0 and d-1, are d's): the
    sorted (state, flavors) of its workloads."""
    out: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
    for w in result["workloads"]:
        name = w["name"].rsplit("-", 1)[0] if w["kind"] == "Deployment" else w["name"]
        flavors: dict[str, str] = {}
        for psa in (w["admission"] or {}).get("podSetAssignments", []):
            flavors.update(psa["flavors"])
        out.setdefault((w["kind"], name), []).append((w["state"], flavors))
    return {k: sorted(v, key=json.dumps) for k, v in out.items()}


def _live_by_object(kueue: Kueue, ns: str) -> dict[tuple[str, str], list[tuple[str, dict[str, str]]]]:
    """The same from the cluster: each Workload traced to the object it stands for (its owning Job or
    Pod; a Pod's ReplicaSet to its Deployment; a group to its name, a StatefulSet's to the StatefulSet)."""
    pods_by_name = {p["metadata"]["name"]: p for p in kueue.items("pods", ns)}
    sets = {statefulset_rules.name_of(s): s["metadata"]["name"] for s in kueue.items("statefulsets", ns)}
    out: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        meta = wl["metadata"]
        owners = meta.get("ownerReferences") or []
        if (meta.get("annotations") or {}).get(pod_rules.IS_GROUP_WORKLOAD) == "true":
            key = ("StatefulSet", sets[meta["name"]]) if meta["name"] in sets else ("Pod", meta["name"])
        elif owners[0]["kind"] == "Job":
            key = ("Job", owners[0]["name"])
        else:
            owner_pod = pods_by_name.get(owners[0]["name"]) or {"metadata": {}}
            parents = owner_pod["metadata"].get("ownerReferences") or []
            if parents and parents[0]["kind"] == "ReplicaSet":
                key = ("Deployment", parents[0]["name"].rsplit("-", 1)[0])
            else:
                key = ("Pod", owners[0]["name"])
        state = "Admitted" if is_true(wl, "Admitted") else "QuotaReserved" if is_true(wl, "QuotaReserved") else "Pending"
        flavors: dict[str, str] = {}
        for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
            flavors.update(psa.get("flavors") or {})
        out.setdefault(key, []).append((state, flavors if state != "Pending" else {}))
    return {k: sorted(v, key=json.dumps) for k, v in out.items()}


def test_simulate_predicts_every_kind(pod_kueue: Kueue, ns: str, tmp_path) -> None:
    """tests/scenarios/agreement_every_kind.yaml through `pykueue simulate`, then the same documents live
    (in this test's namespace, its ClusterQueue renamed after it), a second apart in arrival order: every
    object ends with the workloads, states and flavors simulate predicted."""
    from pykueue.api.durations import parse_duration
    from tests.scenario_harness import SCENARIOS, simulate, split

    _, text = split(SCENARIOS / "agreement_every_kind.yaml")
    code, predicted, err = simulate(text, tmp_path)
    assert code == 0 and predicted is not None, err
    docs = [d for d in yaml.safe_load_all(text) if d and d.get("kind") != "Configuration"]
    assert {d["kind"] for d in docs} >= {"Job", "Pod", "Deployment", "StatefulSet"}
    cluster_queue_name = ns
    arrival: dict[int, float] = {}
    for d in docs:
        meta = d["metadata"]
        if d["kind"] == "ClusterQueue":
            meta["name"] = cluster_queue_name
        elif d["kind"] == "LocalQueue":
            d["spec"]["clusterQueue"] = cluster_queue_name
        if d["kind"] not in ("ResourceFlavor", "ClusterQueue"):
            meta["namespace"] = ns
        notes = meta.get("annotations") or {}
        arrival[id(d)] = parse_duration(str(notes.get("pykueue.dev/arrival", "0s")))
        meta["annotations"] = {k: v for k, v in notes.items() if not k.startswith("pykueue.dev/")}
    setup = [d for d in docs if d["kind"] in ("ResourceFlavor", "ClusterQueue", "LocalQueue")]
    objects = [d for d in docs if d["kind"] not in ("ResourceFlavor", "ClusterQueue", "LocalQueue")]
    pod_kueue.apply(setup)
    expected = _predicted_by_object(predicted)
    for at in sorted({arrival[id(d)] for d in objects}):
        group = [d for d in objects if arrival[id(d)] == at]
        pod_kueue.apply(group)
        # arrival order is creation order: let these reach their Workloads before the next arrive
        kinds = {(d["kind"], d["metadata"]["labels"].get(pod_rules.GROUP_NAME_LABEL) or d["metadata"]["name"])
                 for d in group}
        eventually(lambda kinds=kinds: kinds <= set(_live_by_object(pod_kueue, ns)), 60, what=f"workloads of {kinds}")
        time.sleep(1.1)  # creationTimestamp has whole seconds: later arrivals are strictly newer

    def agrees() -> bool:
        return _live_by_object(pod_kueue, ns) == expected

    try:
        eventually(agrees, 90, what="live state as simulate predicted")
    except AssertionError:
        raise AssertionError(f"simulate: {expected}\nlive: {_live_by_object(pod_kueue, ns)}") from None


# ---- docs/cluster.md's example of each kind ------------------------------------------------------------


def _readme_heredoc(path: str) -> list[dict[str, Any]]:
    """The documents docs/cluster.md's "Pods, pod groups, Deployments and StatefulSets" block writes to ``path``."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text()
    start = text.index(f"cat > {path} <<'EOF'\n") + len(f"cat > {path} <<'EOF'\n")
    return [d for d in yaml.safe_load_all(text[start:text.index("\nEOF\n", start)]) if d]


def test_the_readmes_example_of_each_kind(pod_kueue: Kueue, ns: str) -> None:
    """docs/cluster.md's objects, in this test's namespace and with its ClusterQueue named after it, applied as
    that page applies them: the Pod, both members of the group and both StatefulSet replicas run; two of
    the Deployment's three Pods run and one stays gated, its Workload pending."""
    pod_kueue.apply([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                      "metadata": {"name": "default-flavor"}}])

    def local(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for d in docs:
            if d["kind"] == "ClusterQueue":
                d["metadata"]["name"] = ns
            else:
                d["metadata"]["namespace"] = ns
            if d["kind"] == "LocalQueue":
                d["spec"]["clusterQueue"] = ns
        return docs

    pod_kueue.apply(local(_readme_heredoc("/tmp/kc/kinds.yaml")))
    eventually(lambda: ((pod_kueue.get("statefulset", "sample-db", ns) or {}).get("status") or {}).get("readyReplicas")
               == 2, 180, what="sample-db's two replicas ready")
    pod_kueue.apply(local(_readme_heredoc("/tmp/kc/web.yaml")))

    def running(name: str) -> bool:
        obj = get_pod(pod_kueue, name, ns)
        return bool(obj and not pod_rules.gated(obj) and (obj.get("status") or {}).get("phase") == "Running")

    for name in ("sample-pod", "sample-group-0", "sample-group-1", "sample-db-0", "sample-db-1"):
        eventually(lambda name=name: running(name), 120, what=f"{name} running")

    def web() -> tuple[int, int] | None:
        items = [p for p in pod_kueue.items("pods", ns) if (p["metadata"].get("labels") or {}).get("app") == "sample-web"]
        up = sum(1 for p in items if running(p["metadata"]["name"]))
        gated_now = sum(1 for p in items if pod_rules.gated(p))
        return (up, gated_now) if (up, gated_now) == (2, 1) else None

    eventually(web, 120, what="two of sample-web's Pods running, one gated")
    names = sorted(w["metadata"]["name"] for w in pod_kueue.items("workloads.kueue.x-k8s.io", ns))
    assert "sample-group" in names and sts_workload(pod_kueue, "sample-db", ns) in names
    assert sum(n.startswith("pod-sample-web-") for n in names) == 3 and sum(n.startswith("pod-sample-pod-") for n in names) == 1


def test_a_failed_group_member_is_replaced_within_the_admitted_group(pod_kueue: Kueue, ns: str) -> None:
    """A running group of two loses a Pod (Failed, as a kubelet reports a crash): the Workload stays
    admitted, a replacement Pod of the same role joins it and is released at once, and the failed Pod's
    finalizer goes once it is replaced, as upstream's pod group reconciler does."""
    gpu_queue(pod_kueue, ns, "4")
    members = [pod(f"member-{i}", ns, "2", labels={pod_rules.GROUP_NAME_LABEL: "team"},
                   annotations={pod_rules.GROUP_TOTAL_COUNT: "2"}) for i in range(3)]
    pod_kueue.apply(members[:2])
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"member-{i}", ns), 90, what=f"member-{i} running")
    patch = {"status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}}
    pod_kueue.cluster.kubectl("patch", "pod", "member-0", "-n", ns, "--subresource=status", "--type=merge",
                              "-p", json.dumps(patch))
    eventually(lambda: (get_pod(pod_kueue, "member-0", ns) or {}).get("status", {}).get("phase") == "Failed",
               30, what="member-0 failed")
    assert pod_rules.FINALIZER in get_pod(pod_kueue, "member-0", ns)["metadata"]["finalizers"]  # not replaced yet
    pod_kueue.apply(members[2:])
    eventually(lambda: running_on_gpu(pod_kueue, "member-2", ns), 90, what="the replacement running")
    eventually(lambda: pod_rules.FINALIZER not in ((get_pod(pod_kueue, "member-0", ns) or {"metadata": {}})
                                                  ["metadata"].get("finalizers") or []), 60,
               what="the failed member let go")
    wl = pod_kueue.get("workloads.kueue.x-k8s.io", "team", ns)
    assert is_true(wl, "Admitted") and not is_true(wl, "Finished")


def test_a_preempted_deployment_comes_back_when_quota_does(pod_kueue: Kueue, ns: str) -> None:
    """A low-priority Deployment of two 1 cpu replicas fills a 2 cpu queue; a high-priority 2 cpu Pod
    preempts both (each deleted, as a Pod is stopped); the ReplicaSet makes new Pods, which wait gated;
    when the high Pod is deleted they are admitted and run: the Deployment is restored."""
    pod_kueue.apply(priority_classes(ns))
    gpu_queue(pod_kueue, ns, "2", preemption="{withinClusterQueue: LowerPriority}")
    pod_kueue.apply(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      priorityClassName: {ns}-low
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
""")

    def web(state: str) -> set[str] | None:
        items = [p for p in pod_kueue.items("pods", ns) if (p["metadata"].get("labels") or {}).get("app") == "web"
                 and not p["metadata"].get("deletionTimestamp")]
        names = {p["metadata"]["name"] for p in items
                 if (running_on_gpu(pod_kueue, p["metadata"]["name"], ns) if state == "running" else pod_rules.gated(p))}
        return names if len(names) == 2 else None

    first = eventually(lambda: web("running"), 120, what="both replicas running")
    pod_kueue.apply([pod("high", ns, "2", priority_class=f"{ns}-high")])
    eventually(lambda: running_on_gpu(pod_kueue, "high", ns), 120, what="high running")
    waiting = eventually(lambda: web("gated"), 120, what="two new replicas, gated")
    assert not waiting & first  # the preempted Pods were deleted; the ReplicaSet made new ones
    pod_kueue.cluster.kubectl("delete", "pod", "high", "-n", ns, "--wait=false")
    again = eventually(lambda: web("running"), 120, what="the replicas running again")
    assert again == waiting


STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: {queue}}}}}
spec:
  replicas: {replicas}
  serviceName: {name}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def _scale(kueue: Kueue, name: str, ns: str, replicas: int) -> None:
    kueue.cluster.kubectl("scale", "statefulset", name, "-n", ns, f"--replicas={replicas}")


def _admitted_workload(kueue: Kueue, name: str, ns: str) -> dict[str, Any] | None:
    wl = kueue.get("workloads.kueue.x-k8s.io", name, ns)
    return wl if wl is not None and is_true(wl, "Admitted") else None


def test_statefulset_workload_is_its_own_named_with_its_uid_through_scale_to_zero_and_back(
        pod_kueue: Kueue, ns: str) -> None:
    """Upstream: the StatefulSet's Workload is made from it (one pod set main of replicas), named
    GetWorkloadName(uid, name), labelled with its job-uid and owned by it. Scaled to 0 its Pods go and
    the Workload stays, owned, on hold (QuotaReserved=False, reason OnHold; the spec "should delete all
    pods on scale down to zero"); scaled up again the same Workload is admitted and every replica runs
    ("should allow to scale up after scale down to zero")."""
    gpu_queue(pod_kueue, ns, "3")
    pod_kueue.apply(STS.format(name="db", ns=ns, queue="lq", replicas=2))
    sts = eventually(lambda: pod_kueue.get("statefulset", "db", ns), 30, what="the StatefulSet")
    name = statefulset_rules.workload_name("db", sts["metadata"]["uid"])
    wl = eventually(lambda: _admitted_workload(pod_kueue, name, ns), 120, what="its Workload admitted")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("main", 2)]
    assert {"kind": "StatefulSet", "name": "db", "uid": sts["metadata"]["uid"]}.items() <= next(
        o for o in wl["metadata"]["ownerReferences"] if o["kind"] == "StatefulSet").items()
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"db-{i}", ns), 180, what=f"db-{i} running")
    first_uid = wl["metadata"]["uid"]

    _scale(pod_kueue, "db", ns, 0)
    eventually(lambda: not [p for p in pod_kueue.items("pods", ns) if p["metadata"]["name"].startswith("db-")],
               120, what="the replicas gone")
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == sts["metadata"]["uid"]
    held = eventually(lambda: (w := pod_kueue.get("workloads.kueue.x-k8s.io", name, ns))
                      and (c := condition(w, "QuotaReserved")) and c["status"] == "False" and c["reason"] == "OnHold"
                      and w, 120, what="the Workload on hold")
    assert held["metadata"]["uid"] == first_uid and not (held.get("status") or {}).get("admission")
    assert condition(held, "QuotaReserved")["message"] == "StatefulSet scaled to zero; workload on hold"
    assert any(o["kind"] == "StatefulSet" for o in held["metadata"]["ownerReferences"])

    _scale(pod_kueue, "db", ns, 2)
    again = eventually(lambda: _admitted_workload(pod_kueue, name, ns), 120, what="the Workload admitted again")
    assert again["metadata"]["uid"] == first_uid
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"db-{i}", ns), 180, what=f"db-{i} running again")


def test_a_replaced_statefulset_pod_keeps_the_reservation(pod_kueue: Kueue, ns: str) -> None:
    """A replica deleted (a drain, a rolling update's replacement): the StatefulSet controller makes it
    anew, it joins the admitted Workload and is released at once; the Workload is never evicted."""
    gpu_queue(pod_kueue, ns, "2")
    pod_kueue.apply(STS.format(name="web", ns=ns, queue="lq", replicas=2))
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"web-{i}", ns), 180, what=f"web-{i} running")
    name = sts_workload(pod_kueue, "web", ns)
    wl = eventually(lambda: _admitted_workload(pod_kueue, name, ns), 30, what="admitted")
    old = get_pod(pod_kueue, "web-1", ns)["metadata"]["uid"]
    pod_kueue.cluster.kubectl("delete", "pod", "web-1", "-n", ns, "--wait=false")
    eventually(lambda: (p := running_on_gpu(pod_kueue, "web-1", ns)) and p["metadata"]["uid"] != old, 180,
               what="the replacement web-1 running")
    after = pod_kueue.get("workloads.kueue.x-k8s.io", name, ns)
    assert after["metadata"]["uid"] == wl["metadata"]["uid"] and is_true(after, "Admitted")
    assert not is_true(after, "Evicted")


def test_a_statefulset_relabelled_from_a_missing_queue_moves_its_workload_and_pods(pod_kueue: Kueue, ns: str) -> None:
    """Created for a LocalQueue that does not exist: its Workload waits and its first Pod stays gated.
    The queue label changed to a valid one: the Workload moves, the Pods are relabelled, all run."""
    gpu_queue(pod_kueue, ns, "3")
    pod_kueue.apply(STS.format(name="app", ns=ns, queue="lq-missing", replicas=2))
    name = sts_workload(pod_kueue, "app", ns)
    eventually(lambda: (wl := pod_kueue.get("workloads.kueue.x-k8s.io", name, ns))
               and wl["spec"]["queueName"] == "lq-missing" and not is_true(wl, "QuotaReserved"), 60,
               what="the Workload waiting in the missing queue")
    assert gated(eventually(lambda: get_pod(pod_kueue, "app-0", ns), 60, what="app-0"))
    pod_kueue.cluster.kubectl("label", "statefulset", "app", "-n", ns, "--overwrite", "kueue.x-k8s.io/queue-name=lq")
    wl = eventually(lambda: _admitted_workload(pod_kueue, name, ns), 120, what="the Workload admitted in lq")
    assert wl["spec"]["queueName"] == "lq"
    for i in range(2):
        pod_obj = eventually(lambda i=i: running_on_gpu(pod_kueue, f"app-{i}", ns), 180, what=f"app-{i} running")
        assert pod_obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"


def test_a_groups_workload_survives_its_failed_original_deleted_and_excess_pods_go(pod_kueue: Kueue, ns: str) -> None:
    """A running group of two loses member-0 (Failed) and gets member-2 as its replacement: the
    replacement becomes an owner of the group's Workload, so deleting member-0 does not garbage-collect
    it (a ConfigMap owned by member-0 alone shows the garbage collector has acted on the deletion) and
    member-2 keeps running. A fourth member beyond the group's count is deleted."""
    gpu_queue(pod_kueue, ns, "4")
    members = [pod(f"member-{i}", ns, "1", labels={pod_rules.GROUP_NAME_LABEL: "crew"},
                   annotations={pod_rules.GROUP_TOTAL_COUNT: "2"}) for i in range(4)]
    pod_kueue.apply(members[:2])
    for i in range(2):
        eventually(lambda i=i: running_on_gpu(pod_kueue, f"member-{i}", ns), 90, what=f"member-{i} running")
    failed = {"status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}}
    pod_kueue.cluster.kubectl("patch", "pod", "member-0", "-n", ns, "--subresource=status", "--type=merge",
                              "-p", json.dumps(failed))

    def waiting(status: str) -> bool:
        cond = condition(pod_kueue.get("workloads.kueue.x-k8s.io", "crew", ns), "WaitingForReplacementPods")
        return cond is not None and cond["status"] == status

    eventually(lambda: waiting("True"), 60, what="WaitingForReplacementPods True")
    pod_kueue.apply(members[2:3])
    eventually(lambda: running_on_gpu(pod_kueue, "member-2", ns), 90, what="the replacement running")
    eventually(lambda: waiting("False"), 60, what="WaitingForReplacementPods False")
    eventually(lambda: "member-2" in {o["name"] for o in (pod_kueue.get("workloads.kueue.x-k8s.io", "crew", ns) or
                                                          {"metadata": {}})["metadata"].get("ownerReferences") or []},
               60, what="the replacement an owner of the Workload")
    original = get_pod(pod_kueue, "member-0", ns)
    canary = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "canary", "namespace": ns, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "member-0", "uid": original["metadata"]["uid"]}]}}
    pod_kueue.apply([canary])
    pod_kueue.cluster.kubectl("delete", "pod", "member-0", "-n", ns, "--wait=false")
    eventually(lambda: pod_kueue.get("configmap", "canary", ns) is None, 120, what="the garbage collector acting")
    wl = pod_kueue.get("workloads.kueue.x-k8s.io", "crew", ns)
    assert wl is not None and is_true(wl, "Admitted") and not wl["metadata"].get("deletionTimestamp")
    assert running_on_gpu(pod_kueue, "member-2", ns)

    pod_kueue.apply(members[3:])
    eventually(lambda: get_pod(pod_kueue, "member-3", ns) is None, 90, what="the excess member deleted")
    eventually(lambda: "ExcessPodDeleted" in events(pod_kueue, ns, "member-3"), 60, what="its ExcessPodDeleted event")
    assert running_on_gpu(pod_kueue, "member-1", ns) and running_on_gpu(pod_kueue, "member-2", ns)


def test_a_pod_that_lost_kueues_label_holds_its_quota_until_it_has_ended(pod_kueue: Kueue, ns: str) -> None:
    """Issue 51 scenario 1 for a plain Pod: ``first`` (2 cpu of 2) runs; its ``kueue.x-k8s.io/managed``
    label is removed (the watch then reports it deleted) and its Workload deleted. It still runs, so its
    quota is held: ``second`` (1 cpu) stays gated, told why (before: ``first`` looked gone, its quota went
    at once and ``second`` ran beside it, 3 cpu on 2). Once ``first`` has succeeded (seen by fetching it,
    no watch sees it now) the quota goes and ``second`` runs."""
    gpu_queue(pod_kueue, ns, "2")
    pod_kueue.apply([pod("first", ns, "2")])
    eventually(lambda: running_on_gpu(pod_kueue, "first", ns), 90, what="first running")
    wl = workload_for(pod_kueue, ns, "first")
    pod_kueue.cluster.kubectl("label", "pod", "first", "-n", ns, f"{pod_rules.MANAGED_LABEL}-")
    pod_kueue.cluster.kubectl("delete", "workload", wl["metadata"]["name"], "-n", ns, "--wait=false")
    pod_kueue.apply([pod("second", ns, "1")])
    message = eventually(lambda: pending_message(pod_kueue, ns, "second"), 60, what="second's pending message")
    assert "insufficient unused quota for cpu in flavor gpu-h100, 1 more needed" in message
    assert gated(get_pod(pod_kueue, "second", ns)) and running_on_gpu(pod_kueue, "first", ns)
    assert pod_kueue.get("workload", wl["metadata"]["name"], ns) is not None  # held by its finalizer
    succeed(pod_kueue, "first", ns)
    eventually(lambda: running_on_gpu(pod_kueue, "second", ns), 90, what="second running once first ended")
    assert pod_kueue.get("workload", wl["metadata"]["name"], ns) is None
    # Kueue's finalizer stays on a Pod it no longer manages (as upstream's): the user's to remove
    pod_kueue.cluster.kubectl("patch", "pod", "first", "-n", ns, "--type=json", "-p", json.dumps(
        [{"op": "remove", "path": "/metadata/finalizers"}]))


def test_a_pod_another_controller_suspends_waits_unlabelled_until_it_joins_a_group(pod_kueue: Kueue, ns: str) -> None:
    """Upstream's spec "Pod should be admitted after the group labels are added", read and worked out
    here: a Pod suspended by ``OtherController`` (no queue, no group) is gated and given its role hash
    but no managed label, so no Workload is made for it (before: a single Pod's stray Workload). Once
    its controller adds the group, the queue and the managed label, the group's Workload is made from
    the role it was created with, admitted, and the Pod runs and its Workload finishes."""
    gpu_queue(pod_kueue, ns, "2")
    lone = pod("pod-0", ns, "1", labels={"app-role": "worker"},
               annotations={pod_rules.SUSPENDED_BY_PARENT: "OtherController"})
    del lone["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    pod_kueue.apply([lone])
    created = eventually(lambda: (p := get_pod(pod_kueue, "pod-0", ns)) and gated(p) and p, 60, what="pod-0 gated")
    role = created["metadata"]["annotations"][pod_rules.ROLE_HASH]
    assert pod_rules.MANAGED_LABEL not in created["metadata"]["labels"]
    pod_kueue.cluster.kubectl("annotate", "pod", "pod-0", "-n", ns, f"{pod_rules.GROUP_TOTAL_COUNT}=1")
    pod_kueue.cluster.kubectl("label", "pod", "pod-0", "-n", ns, f"{pod_rules.GROUP_NAME_LABEL}=test-group",
                              "kueue.x-k8s.io/queue-name=lq", f"{pod_rules.MANAGED_LABEL}=true")
    wl = eventually(lambda: (w := pod_kueue.get("workloads.kueue.x-k8s.io", "test-group", ns)) and is_true(
        w, "Admitted") and w, 90, what="the group's workload admitted")
    assert [p["name"] for p in wl["spec"]["podSets"]] == [role]
    assert [w["metadata"]["name"] for w in pod_kueue.items("workloads.kueue.x-k8s.io", ns)] == ["test-group"]
    eventually(lambda: running_on_gpu(pod_kueue, "pod-0", ns), 90, what="pod-0 running")
    succeed(pod_kueue, "pod-0", ns)
    eventually(lambda: is_true(pod_kueue.get("workloads.kueue.x-k8s.io", "test-group", ns) or {}, "Finished"), 90,
               what="the group's workload finished")
