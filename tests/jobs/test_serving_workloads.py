"""Deployments and StatefulSets -> the Pods and Workloads upstream's integrations make of them."""

from __future__ import annotations

import hashlib

import pytest

from pykueue.jobs import framework
from pykueue.jobs.deployment.workload import pods, validate, workloads_from_deployment
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.statefulset.workload import (
    ON_HOLD_MESSAGE,
    members,
    name_of,
    pod_marks,
    reconcile,
    workload_from_statefulset,
    workload_name,
)
from pykueue.jobs.statefulset.workload import pods as sts_pods


def _serving(kind: str, replicas: object = 3, **labels: str) -> dict:
    spec: dict = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}, "annotations": {"team": "a"}},
            "spec": {"priorityClassName": "high",
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta = {"name": "web", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q", **labels},
            "annotations": {"pykueue.dev/runtime": "5s"}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def test_deployment_pods_are_named_by_replica_and_carry_the_webhook_labels() -> None:
    made = pods(_serving("Deployment", **{"kueue.x-k8s.io/priority-class": "gold", "other": "x"}))
    assert [p["metadata"]["name"] for p in made] == ["web-0", "web-1", "web-2"]
    first = made[0]["metadata"]
    # queue and workload priority class copied from the Deployment; its other labels are not
    assert first["labels"] == {"app": "web", "kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": "gold"}
    assert first["annotations"] == {"pykueue.dev/runtime": "5s", "team": "a",
                                    "kueue.x-k8s.io/pod-suspending-parent": "deployment"}
    assert first["namespace"] == "ns"
    assert made[0]["spec"]["priorityClassName"] == "high"


def test_deployment_is_one_single_pod_workload_per_replica() -> None:
    built = workloads_from_deployment(_serving("Deployment"))
    assert [name for name, _ in built] == ["web-0", "web-1", "web-2"]
    for name, workload in built:
        assert workload["spec"]["queueName"] == "q"
        assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("main", 1)]
        assert workload["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                                        "name": "high"}
        assert workload["metadata"]["ownerReferences"][0]["name"] == name


@pytest.mark.parametrize(("replicas", "names"), [(None, ["web-0"]), (0, []), (2, ["web-0", "web-1"])])
def test_deployment_replicas_default_to_one(replicas: object, names: list[str]) -> None:
    assert [n for n, _ in workloads_from_deployment(_serving("Deployment", replicas))] == names


def test_deployment_validation_lists_every_problem_with_its_path() -> None:
    bad = _serving("Deployment", -1, **{"kueue.x-k8s.io/queue-name": "Bad_Q"})
    del bad["spec"]["template"]
    assert [(e.path, e.message.split(":")[0]) for e in validate(bad)] == [
        ("metadata.labels[kueue.x-k8s.io/queue-name]", "Invalid value"),
        ("spec.template", "Required value"),
        ("spec.replicas", "Invalid value"),
    ]
    with pytest.raises(JobConversionError):
        workloads_from_deployment(bad)


def test_statefulset_workload_is_named_with_its_uid_as_upstream_v018_names_it() -> None:
    # GetWorkloadName(uid, name): sha1 over kind, group, name and the StatefulSet's UID
    digest = hashlib.sha1(b"StatefulSet\napps\nweb\nu-1").hexdigest()[:5]
    assert workload_name("web", "u-1") == f"statefulset-web-{digest}"
    with_uid = {**_serving("StatefulSet"), "metadata": {"name": "web", "uid": "u-1"}}
    assert name_of(with_uid) == f"statefulset-web-{digest}"
    # no UID (a simulator manifest): the name stands in for it, as for every other kind there
    assert name_of(_serving("StatefulSet")) == "statefulset-web-" + hashlib.sha1(
        b"StatefulSet\napps\nweb\nweb").hexdigest()[:5]


def test_a_statefulsets_pod_is_named_into_its_owners_group_by_the_pod_webhook() -> None:
    pod = {"metadata": {"name": "web-0", "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                             "uid": "u-1", "controller": True}]}}
    name = workload_name("web", "u-1")
    assert pod_marks(pod) == {"kueue.x-k8s.io/pod-group-name": name, "kueue.x-k8s.io/prebuilt-workload-name": name}
    pod["metadata"]["annotations"] = {}  # not marked by the StatefulSet webhook: not Kueue's
    assert pod_marks(pod) == {}


def test_statefulset_pods_are_one_serving_group_of_replicas_in_the_role_main() -> None:
    sts = _serving("StatefulSet")
    made = sts_pods(sts)
    assert [p["metadata"]["name"] for p in made] == ["web-0", "web-1", "web-2"]
    for i, pod in enumerate(made):
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == name_of(sts)
        assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "3"
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] == "true"
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] == "true"
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] == "main"


def test_statefulset_workload_is_one_pod_set_main_of_replicas_owned_by_the_statefulset() -> None:
    sts = {**_serving("StatefulSet"), "metadata": {**_serving("StatefulSet")["metadata"], "uid": "u-1"}}
    built = workload_from_statefulset(sts)
    assert built is not None
    assert built["metadata"]["name"] == workload_name("web", "u-1")
    assert [(ps["name"], ps["count"]) for ps in built["spec"]["podSets"]] == [("main", 3)]
    assert built["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-1"}]
    assert built["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    assert built["spec"]["queueName"] == "q"


def test_statefulset_workload_names_its_owner_and_takes_the_statefulsets_own_priority_class() -> None:
    """Upstream's constructWorkload and PrepareWorkloadPriority on the StatefulSet: the job-owner
    annotations name it; its own `kueue.x-k8s.io/priority-class` label wins over the template's
    `priorityClassName`, and that label on the template alone is not read (issue 53, items 3 and 4)."""
    sts = _serving("StatefulSet", **{"kueue.x-k8s.io/priority-class": "gold"})
    built = workload_from_statefulset(sts)
    assert built is not None
    annotations = built["metadata"]["annotations"]
    assert (annotations["kueue.x-k8s.io/job-owner-gvk"], annotations["kueue.x-k8s.io/job-owner-name"]) == (
        "apps/v1, Kind=StatefulSet", "web")
    assert built["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                 "name": "gold"}
    on_template = _serving("StatefulSet")
    on_template["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "gold"
    assert workload_from_statefulset(on_template)["spec"]["priorityClassRef"] == {  # type: ignore[index]
        "group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}


def test_statefulset_of_no_replicas_has_no_workload() -> None:
    assert workload_from_statefulset(_serving("StatefulSet", 0)) is None


# ---- the StatefulSet reconciler (upstream's statefulset_reconciler.go) ---------------------------------


def _managed(replicas: int = 3, queue: str = "q") -> dict:
    sts = _serving("StatefulSet", replicas, **{"kueue.x-k8s.io/queue-name": queue})
    sts["metadata"].update({"uid": "s-1", "namespace": "ns"})
    sts["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] = "statefulset"
    return sts


def _sts_pod(name: str, uid: str = "s-1", **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"p-{name}", "labels": dict(labels),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                              "uid": uid, "controller": True}]}}


def _writes(sts: dict, workload: dict | None, pods: list) -> list:
    """``reconcile``'s actions without the idempotent let-go a StatefulSet with replicas always says."""
    return [a for a in reconcile(sts, workload, pods) if not (isinstance(a, framework.Hold) and not a.held)]


def _workload_of(sts: dict, *owners: dict, queue: str = "q", admitted: bool = False) -> dict:
    workload = {"metadata": {"name": name_of(sts), "namespace": "ns", "resourceVersion": "4",
                             "ownerReferences": list(owners)}, "spec": {"queueName": queue}, "status": {}}
    if admitted:
        workload["status"]["admission"] = {"clusterQueue": "cq"}
    return workload


def test_a_statefulset_without_workload_gets_one_made_from_itself() -> None:
    (create,) = reconcile(_managed(), None, [])
    assert isinstance(create, framework.CreateWorkload)
    assert create.manifest["metadata"]["name"] == workload_name("web", "s-1")
    assert create.manifest["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert reconcile(_managed(0), None, []) == []  # no replicas: nothing to queue
    unmarked = _managed()
    del unmarked["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"]
    assert reconcile(unmarked, None, []) == []  # the webhook left it alone: so does the reconciler


def test_scaled_to_zero_the_statefulset_keeps_its_workload_on_hold_and_lets_it_go_when_scaled_up() -> None:
    """Upstream's statefulset reconciler (the spec "should delete all pods on scale down to zero"): at 0
    replicas the StatefulSet keeps owning its Workload, which is put on hold; its quota goes only once
    none of its Pods may run (a terminating replica still may: no JobStopped while web-0 is Running,
    JobStopped once it has Failed or is gone). Scaled up again the hold is let go; scaled up to another
    size the held Workload's count follows (it holds no quota); a Workload that lost its owner (an
    earlier release at 0) is owned again, with the owner annotations."""
    sts = _managed(0)
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s-1"}
    name = name_of(sts)
    held = _workload_of(sts, owner, admitted=True)
    held["spec"]["podSets"] = [{"name": "main", "count": 3}]
    running = _sts_pod("web-0")
    running["metadata"]["deletionTimestamp"] = "2026-12-03T12:00:00Z"  # terminating: it may still run
    running["status"] = {"phase": "Running"}
    assert reconcile(sts, held, [running])[-1] == framework.Hold("ns", name, True, ON_HOLD_MESSAGE)
    assert not any(isinstance(a, framework.JobStopped) for a in reconcile(sts, held, [running]))
    ended = {**running, "status": {"phase": "Failed"}}
    assert reconcile(sts, held, [ended])[-2:] == [framework.Hold("ns", name, True, ON_HOLD_MESSAGE),
                                                   framework.JobStopped("ns", name)]
    assert reconcile(sts, held, [])[-2:] == [framework.Hold("ns", name, True, ON_HOLD_MESSAGE),
                                              framework.JobStopped("ns", name)]
    assert not any(isinstance(a, framework.Patch) and a.kind == "Workload" for a in reconcile(sts, held, []))
    released = _workload_of(sts, owner)
    released["spec"]["podSets"] = [{"name": "main", "count": 3}]
    assert reconcile(_managed(3), released, []) == [framework.Hold("ns", name, False)]
    let_go, resize = reconcile(_managed(2), released, [])
    assert let_go == framework.Hold("ns", name, False)
    assert (resize.kind, resize.body) == ("Workload", {"spec": {"podSets": [{"name": "main", "count": 2}]},
                                                       "metadata": {"resourceVersion": "4"}})
    pod_owner = {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "p-web-0"}
    orphan = _workload_of(_managed(3), pod_owner)
    orphan["spec"]["podSets"] = [{"name": "main", "count": 3}]
    take, _note, _go = reconcile(_managed(3), orphan, [])
    assert take.body["metadata"]["ownerReferences"] == [pod_owner, owner]
    assert take.body["metadata"]["annotations"] == {"kueue.x-k8s.io/job-owner-gvk": "apps/v1, Kind=StatefulSet",
                                                    "kueue.x-k8s.io/job-owner-name": "web"}


def test_the_statefulsets_pods_are_labelled_with_its_group_and_a_new_queue() -> None:
    sts = _managed(queue="other")
    name = name_of(sts)
    mine = _sts_pod("web-0", **{"kueue.x-k8s.io/pod-group-name": name, "kueue.x-k8s.io/prebuilt-workload-name": name,
                                "kueue.x-k8s.io/queue-name": "q"})
    assert members(sts, [mine, _sts_pod("web-1", uid="s-0")]) == [mine]  # a predecessor's Pod is not its own
    owner = {"kind": "StatefulSet", "uid": "s-1"}
    relabel, move, _ = _writes(sts, _workload_of(sts, owner, queue="q"), [mine])
    assert (relabel.kind, relabel.name, relabel.body) == ("Pod", "web-0", {"metadata": {"labels": {
        "kueue.x-k8s.io/queue-name": "other"}}})
    assert (move.kind, move.body) == ("Workload", {"spec": {"queueName": "other"}})
    # a Workload holding quota keeps its queue (upstream: the queue label is immutable while it runs)
    (relabel_only,) = _writes(sts, _workload_of(sts, owner, queue="q", admitted=True), [mine])
    assert relabel_only.kind == "Pod"


def test_a_replica_going_or_ended_loses_kueues_finalizer() -> None:
    sts = _managed()
    name = name_of(sts)
    labels = {"kueue.x-k8s.io/pod-group-name": name, "kueue.x-k8s.io/prebuilt-workload-name": name,
              "kueue.x-k8s.io/queue-name": "q"}
    going = _sts_pod("web-1", **labels)
    going["metadata"].update({"deletionTimestamp": "t", "finalizers": ["kueue.x-k8s.io/managed"], "resourceVersion": "9"})
    running = _sts_pod("web-0", **labels)
    running["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
    owner = {"kind": "StatefulSet", "uid": "s-1"}
    (finalize,) = _writes(sts, _workload_of(sts, owner), [running, going])
    assert finalize.name == "web-1" and finalize.body["metadata"] == {"finalizers": None, "resourceVersion": "9"}
