"""The LeaderWorkerSet integration's pure rules (pykueue.jobs.leaderworkerset.workload), each outcome worked out by
hand from upstream's leaderworkerset reconcilers and webhook."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from pykueue.jobs.framework import CreateWorkload, Delete, Patch, SetPriority, Warn
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.leaderworkerset import workload as lws

SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"


def container(cpu: str, image: str = "nginx") -> dict[str, Any]:
    return {"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}


def an_lws(*, leader: bool = True, replicas: int = 2, size: int = 3, queue: str | None = "lq",
           marked: bool = True) -> dict[str, Any]:
    """infer in ml (uid u1): leader 1 cpu, workers 2 cpu."""
    marks = {"annotations": {SUSPENDED_BY_PARENT: lws.FRAMEWORK, "kueue.x-k8s.io/pod-group-serving": "true"}} if marked else {}
    template: dict[str, Any] = {"size": size, "workerTemplate": {"metadata": copy.deepcopy(marks), "spec": {
        "containers": [container("2")]}}}
    if leader:
        template["leaderTemplate"] = {"metadata": copy.deepcopy(marks), "spec": {"containers": [container("1")]}}
    meta: dict[str, Any] = {"name": "infer", "namespace": "ml", "uid": "u1"}
    if queue:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return {"apiVersion": lws.API_VERSION, "kind": lws.KIND, "metadata": meta,
            "spec": {"replicas": replicas, "leaderWorkerTemplate": template}}


def expected_name(index: int) -> str:
    digest = hashlib.sha1(f"LeaderWorkerSet\nleaderworkerset.x-k8s.io\ninfer-{index}\nu1".encode()).hexdigest()[:5]
    return f"leaderworkerset-infer-{index}-{digest}"


def test_each_group_has_its_workload_named_from_the_lws_its_index_and_uid() -> None:
    wl = lws.workload_for_group(an_lws(), 1)
    assert wl["metadata"]["name"] == expected_name(1)
    assert wl["metadata"]["namespace"] == "ml"
    assert wl["metadata"]["ownerReferences"] == [
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "infer", "uid": "u1"}]
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    # NewGroupWorkload labels it with the LWS's UID, as every job's Workload (issue 53, item 9)
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "u1"}
    assert wl["spec"]["queueName"] == "lq"
    # a leader and size - 1 workers, each pod set holding only its template's spec
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
    assert wl["spec"]["podSets"][0]["template"] == {"spec": {"containers": [container("1")]}}
    assert wl["spec"]["podSets"][1]["template"] == {"spec": {"containers": [container("2")]}}


def test_without_a_leader_template_the_group_is_one_main_pod_set_of_size() -> None:
    wl = lws.workload_for_group(an_lws(leader=False), 0)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("main", 3)]


def test_priority_is_the_label_else_the_first_template_naming_a_class() -> None:
    obj = an_lws()
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["priorityClassName"] = "high"
    assert lws.workload_for_group(obj, 0)["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "gold"
    assert lws.workload_for_group(obj, 0)["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "gold"}


def test_reconcile_creates_the_missing_groups_workloads() -> None:
    actions = lws.reconcile(an_lws(), [], [])
    assert [a.manifest["metadata"]["name"] for a in actions if isinstance(a, CreateWorkload)] == [
        expected_name(0), expected_name(1)]


def test_scaling_down_deletes_the_gone_groups_workloads_and_scaling_up_adds_only_new_ones() -> None:
    three = [lws.workload_for_group(an_lws(replicas=3), i) for i in range(3)]
    for wl in three:
        wl["spec"].pop("priorityClassRef", None)
    down = lws.reconcile(an_lws(replicas=2), three, [])
    assert [a.name for a in down if isinstance(a, Delete)] == [expected_name(2)]
    # its finalizer goes first, so the delete is prompt
    assert any(isinstance(a, Patch) and a.name == expected_name(2) and a.body["metadata"]["finalizers"] is None
               for a in down)
    assert not any(isinstance(a, CreateWorkload) for a in down)
    up = lws.reconcile(an_lws(replicas=4), three, [])
    assert [a.manifest["metadata"]["name"] for a in up if isinstance(a, CreateWorkload)] == [expected_name(3)]
    assert not any(isinstance(a, Delete) for a in up)


def test_surge_groups_of_a_rolling_update_keep_their_workloads() -> None:
    obj = an_lws(replicas=2)
    obj["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 1}}
    obj["status"] = {"replicas": 3, "updatedReplicas": 1}
    assert lws.groups(obj) == 3
    obj["status"]["updatedReplicas"] = 2  # the rollout is done: back to spec.replicas
    assert lws.groups(obj) == 2
    obj["status"]["updatedReplicas"] = 1
    obj["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = 0
    assert lws.groups(obj) == 2


def test_a_changed_priority_class_is_set_on_the_existing_workloads() -> None:
    existing = [lws.workload_for_group(an_lws(), i) for i in range(2)]
    obj = an_lws()
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "gold"
    updates = [a for a in lws.reconcile(obj, existing, []) if isinstance(a, SetPriority)]
    assert [(a.name, a.ref["name"]) for a in updates] == [(expected_name(0), "gold"), (expected_name(1), "gold")]


def test_an_unmanaged_lws_is_left_alone() -> None:
    assert lws.reconcile(an_lws(queue=None, marked=False), [], []) == []


def pod(name: str, group: str | None, *, worker: bool, phase: str = "Pending") -> dict[str, Any]:
    labels = {lws.SET_NAME_LABEL: "infer"}
    if group is not None:
        labels[lws.GROUP_INDEX_LABEL] = group
    annotations = {SUSPENDED_BY_PARENT: lws.FRAMEWORK}
    if worker:
        annotations[lws.LEADER_NAME_ANNOTATION] = "infer-" + str(group)
    return {"metadata": {"name": name, "namespace": "ml", "labels": labels, "annotations": annotations,
                         "finalizers": ["kueue.x-k8s.io/managed"], "resourceVersion": "7"},
            "status": {"phase": phase}}


def test_each_pod_is_named_into_its_groups_workload_with_its_role() -> None:
    existing = [lws.workload_for_group(an_lws(), i) for i in range(2)]
    pods = [pod("infer-1", "1", worker=False), pod("infer-1-1", "1", worker=True), pod("infer-0-2", None, worker=True)]
    patches = {a.name: a.body["metadata"] for a in lws.reconcile(an_lws(), existing, pods) if isinstance(a, Patch)}
    assert patches["infer-1"] == {
        "labels": {"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "lq",
                   "kueue.x-k8s.io/pod-group-name": expected_name(1), "kueue.x-k8s.io/prebuilt-workload-name": expected_name(1)},
        "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3", "kueue.x-k8s.io/role-hash": "leader"}}
    assert patches["infer-1-1"]["annotations"]["kueue.x-k8s.io/role-hash"] == "worker"
    assert "infer-0-2" not in patches  # no group index yet: LWS's controller has not labelled it


def test_without_a_leader_template_every_pod_is_main() -> None:
    obj = an_lws(leader=False)
    actions = lws.reconcile(obj, [lws.workload_for_group(obj, i) for i in range(2)], [pod("infer-0", "0", worker=False)])
    assert [a.body["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] for a in actions if isinstance(a, Patch)] == ["main"]


def test_a_labelled_pod_is_not_patched_again_and_an_ended_one_loses_its_finalizer() -> None:
    existing = [lws.workload_for_group(an_lws(), i) for i in range(2)]
    labelled = pod("infer-0", "0", worker=False)
    labelled["metadata"]["labels"].update({"kueue.x-k8s.io/queue-name": "lq",
                                           "kueue.x-k8s.io/pod-group-name": lws.name_of(an_lws(), "0")})
    ended = pod("infer-1", "1", worker=False, phase="Failed")
    patches = [a for a in lws.reconcile(an_lws(), existing, [labelled, ended]) if isinstance(a, Patch)]
    assert [(a.name, a.body) for a in patches] == [("infer-1", {"metadata": {"finalizers": None, "resourceVersion": "7"}})]


def test_a_pod_whose_template_named_another_queue_joins_its_group_in_the_lws_queue() -> None:
    """Upstream's spec "should admit and evict correctly when queue-name is set on pod templates": the
    worker template says ``user-queue``, the LWS ``lq``. The webhook stamps ``lq`` onto both templates;
    a Pod made before that (or from a template the webhook never saw) still gets the group's marks with
    the LWS's queue. Before: a queue label of any value meant "marked", and the Pod stayed gated."""
    obj = an_lws()
    stray = pod("infer-0", "0", worker=False)
    stray["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue"
    labels, _ = lws.pod_marks(obj, stray)  # type: ignore[misc]
    assert labels["kueue.x-k8s.io/queue-name"] == "lq"
    assert labels["kueue.x-k8s.io/pod-group-name"] == lws.name_of(obj, "0")
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    ops = lws.defaults(obj, suspend=True)
    assert {"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/metadata/labels/kueue.x-k8s.io~1queue-name",
            "value": "lq"} in ops


# ---- the webhook -----------------------------------------------------------------------------------


def test_defaulting_marks_both_templates_of_a_managed_lws() -> None:
    obj = an_lws(marked=False)
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "gold"
    obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"].pop("metadata")
    ops = lws.defaults(obj, suspend=True)
    assert ops == [
        {"op": "add", "path": "/spec/leaderWorkerTemplate/leaderTemplate/metadata", "value": {
            "annotations": {SUSPENDED_BY_PARENT: lws.FRAMEWORK, "kueue.x-k8s.io/pod-group-serving": "true"},
            "labels": {"kueue.x-k8s.io/priority-class": "gold", "kueue.x-k8s.io/queue-name": "lq"}}},
        {"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/metadata/labels",
         "value": {"kueue.x-k8s.io/priority-class": "gold", "kueue.x-k8s.io/queue-name": "lq"}},
        {"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/metadata/annotations", "value": {
            SUSPENDED_BY_PARENT: lws.FRAMEWORK, "kueue.x-k8s.io/pod-group-serving": "true"}}]
    assert lws.defaults(obj, suspend=False) == []


def test_either_startup_policy_is_allowed_when_queued() -> None:
    """v0.18's webhook no longer refuses LeaderReady with a queue (its e2e scales LeaderReady LWSs)."""
    for policy in ("LeaderReady", "LeaderCreated"):
        obj = an_lws()
        obj["spec"]["startupPolicy"] = policy
        assert lws.validate_create(obj) == []
        assert lws.validate_update(an_lws(), obj, managed=True) == []


def test_a_bad_queue_name_is_refused() -> None:
    errors = lws.validate_create(an_lws(queue="Not_A_Name"))
    assert [e.path for e in errors] == ["metadata.labels[kueue.x-k8s.io/queue-name]"]


def test_update_keeps_the_queue_and_each_templates_shape_but_lets_an_image_roll() -> None:
    old = an_lws()
    new = copy.deepcopy(old)
    new["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "nginx:2"
    new["spec"]["replicas"] = 5
    assert lws.validate_update(old, new, managed=True) == []
    bigger = copy.deepcopy(old)
    bigger["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    errors = lws.validate_update(old, bigger, managed=True)
    # upstream's webhook test: a request list is compared whole, so the path ends at "requests"
    assert [e.path for e in errors] == [
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests"]
    assert lws.validate_update(old, bigger, managed=False) == []
    dropped = copy.deepcopy(old)
    del dropped["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert [e.path for e in lws.validate_update(old, dropped, managed=True)] == ["spec.leaderWorkerTemplate.leaderTemplate"]
    # the queue changes only while no group is ready (upstream's spec "should allow to change
    # queue-name if ReadyReplicas=0"): an_lws() has no ready replica; one with a ready group keeps it
    moved = copy.deepcopy(old)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    assert lws.validate_update(old, moved, managed=True) == []
    running = {**copy.deepcopy(old), "status": {"readyReplicas": 1}}
    assert [e.path for e in lws.validate_update(running, moved, managed=True)] == [
        "metadata.labels[kueue.x-k8s.io/queue-name]"]


def test_a_lws_moved_to_another_queue_moves_its_groups_workloads_that_hold_no_quota() -> None:
    moved = an_lws()
    existing = [lws.workload_for_group(an_lws(), i) for i in range(2)]
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    existing[1]["status"] = {"admission": {"clusterQueue": "cq"}}  # admitted: it stays where it runs
    patches = [a for a in lws.reconcile(moved, existing, []) if isinstance(a, Patch) and a.kind == "Workload"]
    assert [(a.name, a.body) for a in patches] == [(lws.name_of(moved, "0"), {"spec": {"queueName": "other"}})]


def test_a_lws_without_worker_containers_cannot_become_a_workload() -> None:
    obj = an_lws()
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"] = []
    try:
        lws.workload_for_group(obj, 0)
    except JobConversionError as exc:
        assert exc.path == "spec.leaderWorkerTemplate.workerTemplate.spec.containers"
    else:
        raise AssertionError("no error")


def test_a_lws_that_cannot_become_a_workload_is_warned_about_not_retried() -> None:
    obj = an_lws()
    obj["spec"]["leaderWorkerTemplate"]["size"] = 0
    (warn,) = lws.reconcile(obj, [], [])
    assert isinstance(warn, Warn) and warn.reason == "ErrWorkloadCompose"
    assert warn.message == "spec.leaderWorkerTemplate.size: Invalid value: 0: must be greater than or equal to 1"
