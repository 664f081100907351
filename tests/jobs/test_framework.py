"""The job framework's one reconcile rule, driven through the Job and the Pod integrations, and the
pod integration's webhooks. Every expectation is worked out from upstream's jobframework reconciler and
pod integration (pod_webhook.go, pod_controller.go)."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs import framework, registry
from pykueue.jobs.deployment import webhook as deployment_webhook
from pykueue.jobs.framework import (
    CreateWorkload,
    Delete,
    JobStopped,
    Note,
    Patch,
    Replace,
    WorkloadConditions,
)
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.statefulset import webhook as statefulset_webhook
from pykueue.jobs.statefulset import workload as statefulset
from tests.jobs.writes import reconcile

# upstream's Job.Stop: suspended, with the stopping annotation, in one write
STOP = {"metadata": {"annotations": {"kueue.x-k8s.io/stopping": "true"}}, "spec": {"suspend": True}}
FLAVORS = {"on-demand": {"metadata": {"name": "on-demand"}, "spec": {"nodeLabels": {"instance": "on-demand"}}}}


def _pod(name: str = "p", *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
         gated: bool = True, phase: str = "Pending", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": pods.GATE}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", pods.MANAGED_LABEL: "true", **(labels or {})},
                         "annotations": dict(annotations or {}), "finalizers": [pods.FINALIZER], **meta},
            "spec": spec, "status": {"phase": phase}}


def _admitted(name: str, flavor: str = "on-demand", pod_set: str = "main", count: int = 1,
              extra: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"},
                                      *extra],
                       "admission": {"clusterQueue": "cq", "podSetAssignments": [
                           {"name": pod_set, "count": count, "flavors": {"cpu": flavor}}]}}}


def _pending(name: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "status": {"conditions": list(conditions)}}


# ---- Job ---------------------------------------------------------------------------------------------


def _job(suspend: bool) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": suspend, "parallelism": 2, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}


def test_a_running_job_without_workload_is_suspended_then_queued() -> None:
    actions = reconcile(Job(_job(suspend=False)), None, FLAVORS)
    assert isinstance(actions[0], Patch) and actions[0].body == {"spec": {"suspend": True}}
    created = actions[-1]
    assert isinstance(created, CreateWorkload)
    assert created.manifest["spec"]["podSets"][0]["count"] == 2
    assert created.manifest["metadata"]["name"] == Job(_job(True)).workload_name()


def test_an_admitted_job_starts_on_its_flavor_and_a_released_one_is_restored() -> None:
    job = Job(_job(suspend=True))
    (start, note) = reconcile(job, _admitted(job.workload_name(), count=2), FLAVORS)
    assert isinstance(start, Replace) and start.obj is not None and isinstance(note, Note)
    assert start.obj["spec"]["suspend"] is False
    assert start.obj["spec"]["template"]["spec"]["nodeSelector"] == {"instance": "on-demand"}
    running = Job(start.obj)
    released = _pending(job.workload_name(), {"type": "QuotaReserved", "status": "False"})
    released["spec"] = job.build_workload()["spec"]  # restored from the Workload's pod set, as upstream
    stop = reconcile(running, released, FLAVORS)
    assert isinstance(stop[0], Patch) and stop[0].body == STOP
    restore = next(a for a in stop if isinstance(a, Replace))
    assert restore.change is not None
    restored = restore.change(copy.deepcopy(start.obj))
    assert restored["spec"]["suspend"] is True and "nodeSelector" not in restored["spec"]["template"]["spec"]


def _evicted(name: str, **meta: Any) -> dict[str, Any]:
    """Evicted while its job may still run: the reservation is still in the status (upstream clears
    it once the job is inactive)."""
    workload = _admitted(name, count=2, extra=({"type": "Evicted", "status": "True", "reason": "Preempted"},))
    workload["metadata"].update(meta)
    workload["spec"] = Job(_job(True)).build_workload()["spec"]
    return workload


def test_an_evicted_job_is_stopped_and_its_quota_released_only_once_no_pod_is_active() -> None:
    running = _job(suspend=False)
    running["status"] = {"active": 2}
    evicted = _evicted(Job(running).workload_name())
    actions = reconcile(Job(running), evicted, FLAVORS)  # Admitted=True too: evicted comes first
    assert isinstance(actions[0], Patch) and actions[0].body == STOP
    assert not any(isinstance(a, JobStopped) for a in actions)
    suspended = {**running, "spec": {**running["spec"], "suspend": True}}
    assert reconcile(Job(suspended), evicted, FLAVORS) == []  # the Job controller still counts 2 pods
    suspended["status"] = {"active": 0, "terminating": 2}  # in their grace period: they still run
    assert reconcile(Job(suspended), evicted, FLAVORS) == []
    suspended["status"] = {"active": 0, "terminating": 0}
    assert reconcile(Job(suspended), evicted, FLAVORS) == [JobStopped("ns", Job(running).workload_name())]


def test_a_deleted_workloads_job_is_stopped_before_its_quota_goes() -> None:
    running = _job(suspend=False)
    running["status"] = {"active": 2}
    deleting = _admitted(Job(running).workload_name(), count=2)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    deleting["spec"] = Job(_job(True)).build_workload()["spec"]
    actions = reconcile(Job(running), deleting, FLAVORS)
    assert isinstance(actions[0], Patch) and actions[0].body == STOP
    assert not any(isinstance(a, JobStopped) for a in actions)
    stopped = {**running, "spec": {**running["spec"], "suspend": True}, "status": {}}
    assert reconcile(Job(stopped), deleting, FLAVORS) == [JobStopped("ns", Job(running).workload_name())]


def _with_spec(workload: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    workload["spec"] = Job(job).build_workload()["spec"]
    return workload


def test_a_running_job_whose_parallelism_grew_is_stopped_and_its_workload_replaced() -> None:
    """Upstream's EquivalentToWorkload: the Job now asks for 4 pods, its Workload admitted 2."""
    admitted_for = _job(suspend=False)
    workload = _with_spec(_admitted(Job(admitted_for).workload_name(), count=2), admitted_for)
    grown = copy.deepcopy(admitted_for)
    grown["spec"]["parallelism"] = 4
    actions = reconcile(Job(grown), workload, FLAVORS)
    assert isinstance(actions[0], Patch) and actions[0].body == STOP
    delete = next(a for a in actions if isinstance(a, Delete))
    assert (delete.kind, delete.name) == ("Workload", Job(grown).workload_name())
    assert reconcile(Job(admitted_for), workload, FLAVORS) == []  # unchanged: nothing to do


def test_a_partially_admitted_job_matches_its_admitted_count() -> None:
    job = _job(suspend=False)  # running 1 of its 2 pods: the admission's count
    job["spec"]["parallelism"] = 1
    workload = _with_spec(_admitted(Job(job).workload_name(), count=1), _job(suspend=True))
    assert workload["spec"]["podSets"][0]["count"] == 2
    assert not any(isinstance(a, Delete) for a in reconcile(Job(job), workload, FLAVORS))


def test_a_pending_job_whose_requests_changed_gets_a_new_workload() -> None:
    job = _job(suspend=True)
    workload = _with_spec(_pending(Job(job).workload_name()), job)
    changed = copy.deepcopy(job)
    changed["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    (delete, note) = reconcile(Job(changed), workload, FLAVORS)
    assert isinstance(delete, Delete) and delete.kind == "Workload" and isinstance(note, Note)
    workload["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert reconcile(Job(changed), workload, FLAVORS) == []  # waits for it to go, then creates anew


def test_a_finished_job_finishes_its_workload() -> None:
    job = _job(suspend=False)
    job["status"] = {"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
    (finish,) = reconcile(Job(job), _admitted(Job(job).workload_name()), FLAVORS)
    assert isinstance(finish, WorkloadConditions) and finish.conditions == (("Finished", True, "Succeeded", "done"),)


# ---- the Pod webhook -----------------------------------------------------------------------------------


def _new_pod(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}, **meta},
            "spec": {"containers": [{"name": "c"}]}}


def test_the_pod_webhook_gates_labels_and_finalizes_a_queued_pod() -> None:
    pod = _new_pod()
    assert pods.pod_defaults(pod, registry.enabled(("pod",)), False) == [
        {"op": "add", "path": "/metadata/finalizers", "value": [pods.FINALIZER]},
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1managed", "value": "true"},
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": pods.GATE}]},
        # every Pod it gates, as upstream's addRoleHash (issue 53, item 7)
        {"op": "add", "path": "/metadata/annotations", "value": {pods.ROLE_HASH: pods.role_hash(pod["spec"])}},
    ]


def test_a_pod_another_controller_suspends_is_gated_with_its_role_but_not_labelled_managed() -> None:
    """Upstream's spec "Pod should be admitted after the group labels are added": a Pod suspended by
    ``OtherController`` (no integration here) is gated, finalized and given its role hash, but not the
    managed label: nobody's Workload (before: labelled, it became a single Pod's stray Workload) until
    its controller labels it managed, with its group; then it queues as that group's member."""
    other = _new_pod(labels={"app-role": "worker"}, annotations={pods.SUSPENDED_BY_PARENT: "OtherController"})
    ops = pods.pod_defaults(other, registry.enabled(("pod",)), False)
    assert [op["path"] for op in ops] == ["/metadata/finalizers", "/spec/schedulingGates", "/metadata/annotations/"
                                          "kueue.x-k8s.io~1role-hash"]
    assert ops[-1]["value"] == pods.role_hash(other["spec"])
    ours = _new_pod(annotations={pods.SUSPENDED_BY_PARENT: "deployment"})  # a parent integrated and on: labelled
    assert "/metadata/labels/kueue.x-k8s.io~1managed" in {
        op["path"] for op in pods.pod_defaults(ours, registry.enabled(("deployment",)), False)}


def test_the_pod_webhook_leaves_alone_what_is_not_its_own() -> None:
    assert pods.pod_defaults(_new_pod(), registry.enabled(("batch/job",)), False) == []  # the pod integration is off
    assert pods.pod_defaults(_new_pod(namespace="kube-system"), registry.enabled(("pod",)), False) == []
    assert pods.pod_defaults(_new_pod(labels={}), registry.enabled(("pod",)), False) == []  # no queue name
    owned = _new_pod(ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}])
    assert pods.pod_defaults(owned, registry.enabled(("pod", "batch/job")), False) == []  # its Job is queued instead
    assert pods.pod_defaults(owned, registry.enabled(("pod",)), False) != []  # Jobs are not Kueue's: the Pod is
    # a Deployment's Pod is gated because its parent asked, whatever the pod integration's own selection
    child = _new_pod(annotations={pods.SUSPENDED_BY_PARENT: "deployment"})
    assert any(op["path"] == "/spec/schedulingGates" for op in pods.pod_defaults(child, registry.enabled(("deployment",)), False))


def test_a_group_member_gets_its_role_hash() -> None:
    pod = _new_pod(labels={"kueue.x-k8s.io/queue-name": "lq", pods.GROUP_NAME_LABEL: "g"})
    ops = pods.pod_defaults(pod, registry.enabled(("pod",)), False)
    (role,) = [op for op in ops if op["path"] == "/metadata/annotations"]
    assert role["value"] == {pods.ROLE_HASH: pods.role_hash(pod["spec"])}


def test_deployment_and_statefulset_webhooks_mark_their_pod_templates() -> None:
    deployment = {"metadata": {"name": "web", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                  "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}}
    assert deployment_webhook.deployment_defaults(deployment, False) == [
        {"op": "add", "path": "/spec/template/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "lq"},
        {"op": "add", "path": "/spec/template/metadata/annotations",
         "value": {pods.SUSPENDED_BY_PARENT: "deployment"}}]
    sts = {**deployment, "spec": {"replicas": 3, "template": {"spec": {}}}}
    (op,) = statefulset_webhook.statefulset_defaults(sts, False)
    assert op["path"] == "/spec/template/metadata"
    # the group's name needs the StatefulSet's UID, which only the Pod webhook sees (its owner reference)
    assert op["value"]["labels"] == {"kueue.x-k8s.io/queue-name": "lq"}
    assert op["value"]["annotations"][pods.ROLE_HASH] == "main"
    assert op["value"]["annotations"][pods.GROUP_TOTAL_COUNT] == "3"
    assert op["value"]["annotations"][pods.GROUP_FAST_ADMISSION] == "true"
    assert deployment_webhook.deployment_defaults({**deployment, "metadata": {"name": "web", "namespace": "ns"}}, False) == []


# ---- plain Pods ---------------------------------------------------------------------------------------


def test_a_gated_pod_is_queued_then_released_on_its_flavor() -> None:
    pod = pods.Pod(_pod())
    (created,) = reconcile(pod, None, FLAVORS)
    assert isinstance(created, CreateWorkload)
    manifest = created.manifest
    assert manifest["metadata"]["name"] == pod.workload_name() and manifest["metadata"]["name"].startswith("pod-p-")
    assert manifest["spec"]["podSets"][0]["count"] == 1
    assert "schedulingGates" not in manifest["spec"]["podSets"][0]["template"]["spec"]
    release, _ = reconcile(pod, _admitted(pod.workload_name()), FLAVORS)
    assert isinstance(release, Patch) and release.kind == "Pod"
    assert release.body["spec"]["schedulingGates"] is None
    assert release.body["spec"]["nodeSelector"] == {"instance": "on-demand"}
    assert release.body["metadata"]["resourceVersion"] == "7"


def test_an_evicted_pod_is_marked_and_deleted_and_its_finalizer_goes_with_it() -> None:
    running = pods.Pod(_pod(gated=False, phase="Running"))
    evicted = _pending(running.workload_name(), {"type": "Evicted", "status": "True", "reason": "Preempted"})
    actions = reconcile(running, evicted, FLAVORS)
    status, delete = actions[0], actions[1]
    assert isinstance(status, Patch) and status.subresource == "status"
    assert status.body["status"]["conditions"][0]["type"] == pods.TERMINATION_TARGET
    assert status.body["status"]["conditions"][0]["reason"] == "WorkloadEvicted"
    assert isinstance(delete, Delete) and delete.name == "p"
    (event,) = [a for a in actions if isinstance(a, framework.Event)]
    assert (event.kind, event.name, event.uid, event.reason) == ("Pod", "p", "uid-p", "Stopped")
    assert event.message == "Evicted by Kueue"  # the condition says no more; with a message, that one
    evicted["status"]["conditions"][0]["message"] = "Preempted to accommodate a workload (UID: w2)"
    (event,) = [a for a in reconcile(running, evicted, FLAVORS) if isinstance(a, framework.Event)]
    assert event.message == "Preempted to accommodate a workload (UID: w2)"
    deleting = pods.Pod(_pod(gated=False, phase="Running", deletionTimestamp="2026-01-01T00:00:00Z"))
    (finalize,) = reconcile(deleting, evicted, FLAVORS)
    assert isinstance(finalize, Patch) and finalize.body["metadata"]["finalizers"] is None


def test_an_evicted_pods_quota_goes_once_it_has_terminated() -> None:
    pod = _pod(gated=False, phase="Running", deletionTimestamp="2026-01-01T00:00:00Z")
    name = pods.Pod(pod).workload_name()
    holding = _admitted(name, extra=({"type": "Evicted", "status": "True", "reason": "Preempted"},))
    actions = reconcile(pods.Pod(pod), holding, FLAVORS)
    assert not any(isinstance(a, JobStopped) for a in actions)  # terminating, its containers may run
    pod["status"]["phase"] = "Failed"
    assert JobStopped("ns", name) in reconcile(pods.Pod(pod), holding, FLAVORS)


def test_a_pending_gated_pod_is_left_as_it_is() -> None:
    pod = pods.Pod(_pod())
    workload = _pending(pod.workload_name(), {"type": "QuotaReserved", "status": "False"})
    workload["spec"] = pod.build_workload()["spec"]  # a Pod's Workload is compared with it, as a Job's
    assert reconcile(pod, workload, FLAVORS) == []


def test_a_succeeded_pod_finishes_its_workload_and_loses_its_finalizer() -> None:
    pod = pods.Pod(_pod(gated=False, phase="Succeeded"))
    finish, finalize = reconcile(pod, _admitted(pod.workload_name()), FLAVORS)
    assert isinstance(finish, WorkloadConditions) and finish.conditions[0][:3] == ("Finished", True, "Succeeded")
    assert isinstance(finalize, Patch) and finalize.body["metadata"]["finalizers"] is None


# ---- pod groups ---------------------------------------------------------------------------------------


def _member(name: str, total: int = 2, **kwargs: Any) -> dict[str, Any]:
    return _pod(name, labels={pods.GROUP_NAME_LABEL: "g"},
                annotations={pods.GROUP_TOTAL_COUNT: str(total), **kwargs.pop("annotations", {})}, **kwargs)


def test_a_group_is_queued_only_once_all_its_pods_exist() -> None:
    assert reconcile(pods.PodGroup("ns", "g", [_member("a")]), None, FLAVORS) == []
    group = pods.PodGroup("ns", "g", [_member("a"), _member("b")])
    (created,) = reconcile(group, None, FLAVORS)
    assert isinstance(created, CreateWorkload)
    meta, spec = created.manifest["metadata"], created.manifest["spec"]
    assert meta["name"] == "g" and meta["annotations"][pods.IS_GROUP_WORKLOAD] == "true"
    assert [o["name"] for o in meta["ownerReferences"]] == ["a", "b"]
    role = pods.role_hash(_member("a")["spec"])
    assert [(p["name"], p["count"]) for p in spec["podSets"]] == [(role, 2)]


def test_fast_admission_queues_the_whole_group_at_its_first_pod() -> None:
    first = _member("web-0", total=3, annotations={pods.GROUP_FAST_ADMISSION: "true"})
    (created,) = reconcile(pods.PodGroup("ns", "g", [first]), None, FLAVORS)
    assert isinstance(created, CreateWorkload)
    assert [p["count"] for p in created.manifest["spec"]["podSets"]] == [3]


def test_an_admitted_group_releases_every_gated_pod_together() -> None:
    group = pods.PodGroup("ns", "g", [_member("a"), _member("b")])
    role = pods.role_hash(_member("a")["spec"])
    actions = reconcile(group, _admitted("g", pod_set=role, count=2), FLAVORS)
    released = [a.name for a in actions if isinstance(a, Patch)]
    assert released == ["a", "b"]


def test_a_group_finishes_when_every_pod_succeeded() -> None:
    group = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Succeeded"),
                                      _member("b", gated=False, phase="Running")])
    role = pods.role_hash(_member("a")["spec"])
    # one of two succeeded: not finished, its quota reclaimable
    (reclaim,) = reconcile(group, _admitted("g", pod_set=role, count=2), FLAVORS)
    assert isinstance(reclaim, framework.ReclaimablePods) and dict(reclaim.pods) == {role: 1}
    done = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Succeeded"),
                                     _member("b", gated=False, phase="Succeeded")])
    actions = reconcile(done, _admitted("g", pod_set=role, count=2), FLAVORS)
    assert isinstance(actions[0], WorkloadConditions)
    assert actions[0].conditions == (("Finished", True, "Succeeded", "Pods succeeded: 2/2."),)
    assert [a.name for a in actions[1:]] == ["a", "b"]  # finalizers removed


def test_a_failed_member_is_let_go_once_its_replacement_exists() -> None:
    failed = _member("a", gated=False, phase="Failed")
    group = pods.PodGroup("ns", "g", [failed, _member("b", gated=False, phase="Running")])
    role = pods.role_hash(_member("a")["spec"])
    admitted = _admitted("g", pod_set=role, count=2)
    assert not any(isinstance(a, Patch) and a.name == "a" for a in reconcile(group, admitted, FLAVORS))
    replaced = pods.PodGroup("ns", "g", [failed, _member("b", gated=False, phase="Running"), _member("c")])
    (finalize,) = reconcile(replaced, admitted, FLAVORS)
    assert isinstance(finalize, Patch) and finalize.name == "a" and finalize.body["metadata"]["finalizers"] is None


def test_a_group_never_releases_more_pods_than_its_admission_holds() -> None:
    """Admitted for two Pods of one role: a third member created while the group runs stays gated (the
    quota is for two), and is released only once a running member has failed and left its slot."""
    role = pods.role_hash(_member("a")["spec"])
    admitted = _admitted("g", pod_set=role, count=2)
    extra = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Running"),
                                      _member("b", gated=False, phase="Running"), _member("c")])
    actions = reconcile(extra, admitted, FLAVORS)
    assert not any(isinstance(a, Patch) for a in actions)
    assert any(isinstance(a, Note) and a.warning for a in actions)
    replaced = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Failed", finalizers=[]),
                                         _member("b", gated=False, phase="Running"), _member("c")])
    released = [a.name for a in reconcile(replaced, admitted, FLAVORS) if isinstance(a, Patch)]
    assert released == ["c"]


def test_a_suspended_job_moved_to_another_queue_moves_its_workload() -> None:
    job = _job(suspend=True)
    workload = _with_spec(_pending(Job(job).workload_name()), job)
    moved = copy.deepcopy(job)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    (patch, note) = reconcile(Job(moved), workload, FLAVORS)
    assert isinstance(patch, Patch) and (patch.kind, patch.body) == ("Workload", {"spec": {"queueName": "other"}})
    assert reconcile(Job(job), workload, FLAVORS) == []


# ---- the priority-class label (upstream's UpdateWorkloadPriority) -------------------------------------


def _classed(job: dict[str, Any], name: str | None) -> dict[str, Any]:
    job = copy.deepcopy(job)
    labels = job["metadata"]["labels"]
    labels.pop("kueue.x-k8s.io/priority-class", None)
    if name is not None:
        labels["kueue.x-k8s.io/priority-class"] = name
    return job


def _wpc(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}


def test_a_changed_priority_class_label_updates_the_workload_pending_or_running() -> None:
    for suspend, status in ((True, _pending), (False, lambda name: _admitted(name, count=2))):
        low = _classed(_job(suspend), "low")
        workload = _with_spec(status(Job(low).workload_name()), low)
        workload["metadata"]["uid"] = "wl-uid"
        assert workload["spec"]["priorityClassRef"] == _wpc("low")
        (update, note) = reconcile(Job(_classed(low, "high")), workload, FLAVORS)
        assert update == framework.SetPriority("ns", workload["metadata"]["name"], "wl-uid", _wpc("high"))
        assert isinstance(note, Note) and note.fields["class"] == "high"
        # unchanged: nothing to do (a running job) or nothing but what a pending one always gets (nothing)
        assert not any(isinstance(a, framework.SetPriority) for a in reconcile(Job(low), workload, FLAVORS))


def test_a_label_added_to_a_job_without_class_sets_it_and_a_removed_one_falls_back_to_the_default() -> None:
    plain = _job(True)
    workload = _with_spec(_pending(Job(plain).workload_name()), plain)
    assert "priorityClassRef" not in workload["spec"]
    (update, _) = reconcile(Job(_classed(plain, "high")), workload, FLAVORS)
    assert isinstance(update, framework.SetPriority) and update.ref == _wpc("high")
    classed = _with_spec(_pending(Job(plain).workload_name()), _classed(plain, "high"))
    (update, _) = reconcile(Job(plain), classed, FLAVORS)
    assert isinstance(update, framework.SetPriority) and update.ref is None


def test_a_priority_from_the_pods_priority_class_is_never_overridden_by_the_label() -> None:
    job = _job(True)
    job["spec"]["template"]["spec"]["priorityClassName"] = "pods-high"
    workload = _with_spec(_pending(Job(job).workload_name()), job)
    assert workload["spec"]["priorityClassRef"]["kind"] == "PriorityClass"
    assert reconcile(Job(_classed(job, "high")), workload, FLAVORS) == []


def test_a_job_is_ready_when_its_pod_sets_count_is_min_of_parallelism_and_completions() -> None:
    """Upstream's Job.PodsReady: ready + succeeded >= podsCount (parallelism capped by completions).
    Parallelism 3 with 1 completion runs one pod: one ready pod is all of it."""
    job = _job(suspend=False)
    job["spec"].update(parallelism=3, completions=1)
    job["status"] = {"ready": 1}
    assert Job(job).pods_ready()
    job["spec"]["completions"] = 3
    assert not Job(job).pods_ready()
    job["status"] = {"ready": 2, "succeeded": 1}
    assert Job(job).pods_ready()


# ---- pod groups under churn (upstream's FindMatchingWorkloads for a group) ------------------------------


def _group_workload(role: str, count: int, owners: list[str]) -> dict[str, Any]:
    workload = _admitted("g", pod_set=role, count=count)
    workload["metadata"].update({"resourceVersion": "11", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": n, "uid": f"uid-{n}"} for n in owners]})
    workload["spec"] = {"podSets": [{"name": role, "count": count}]}
    return workload


def test_a_replacement_pod_becomes_an_owner_so_deleting_the_failed_original_keeps_the_workload() -> None:
    role = pods.role_hash(_member("a")["spec"])
    workload = _group_workload(role, 2, ["a", "b"])
    failed = _member("a", gated=False, phase="Failed")
    group = pods.PodGroup("ns", "g", [failed, _member("b", gated=False, phase="Running"), _member("c")])
    actions = reconcile(group, workload, FLAVORS)
    (adopt,) = [a for a in actions if isinstance(a, Patch) and a.kind == "Workload"]
    assert [o["name"] for o in adopt.body["metadata"]["ownerReferences"]] == ["a", "b", "c"]
    assert adopt.body["metadata"]["resourceVersion"] == "11"  # guarded: a stale copy's write fails
    # the failed original is let go in the same pass (its slot is taken by the replacement)
    assert [a.name for a in actions if isinstance(a, Patch) and a.kind == "Pod"] == ["a"]
    # the original deleted: the Workload, owned by b and c too, stays; the replacement is released
    workload["metadata"]["ownerReferences"] = adopt.body["metadata"]["ownerReferences"]
    after = pods.PodGroup("ns", "g", [_member("b", gated=False, phase="Running"), _member("c")])
    (release, _) = reconcile(after, workload, FLAVORS)
    assert isinstance(release, Patch) and release.name == "c" and release.body["spec"]["schedulingGates"] is None


def test_excess_pods_of_an_admitted_group_are_deleted_newest_and_gated_first() -> None:
    role = pods.role_hash(_member("a")["spec"])
    workload = _group_workload(role, 2, ["a", "b", "c"])
    group = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Running", creationTimestamp="t1"),
                                      _member("c", creationTimestamp="t0"),
                                      _member("b", gated=False, phase="Running", creationTimestamp="t2")])
    actions = reconcile(group, workload, FLAVORS)
    finalize, delete, event, note = actions
    assert isinstance(finalize, Patch) and finalize.name == "c" and finalize.body["metadata"]["finalizers"] is None
    assert isinstance(delete, Delete) and delete.name == "c"
    # upstream's pod controller records it on the Pod (issue 53, item 5)
    assert isinstance(event, framework.Event) and (event.kind, event.name, event.reason, event.message) == (
        "Pod", "c", "ExcessPodDeleted", "Excess pod deleted")
    assert isinstance(note, Note)


def test_mismatched_total_counts_make_a_group_that_is_never_queued() -> None:
    group = pods.PodGroup("ns", "g", [_member("a", total=2), _member("b", total=3)])
    actions = reconcile(group, None, FLAVORS)
    assert not any(isinstance(a, CreateWorkload) for a in actions)
    (note,) = [a for a in actions if isinstance(a, Note)]
    assert note.warning and "different kueue.x-k8s.io/pod-group-total-count" in note.fields["error"]
    (warn,) = [a for a in actions if isinstance(a, framework.Warn)]  # and a Warning event on the Pods' group
    assert "different kueue.x-k8s.io/pod-group-total-count" in warn.message


def test_a_serving_group_never_finishes_nor_reclaims() -> None:
    role = pods.role_hash(_member("a")["spec"])
    serving = {pods.GROUP_SERVING: "true"}
    group = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Succeeded", annotations=serving),
                                      _member("b", gated=False, phase="Succeeded", annotations=serving)])
    assert group.finished() == (False, False, "")
    assert group.reclaimable_pods() == {}
    assert not any(isinstance(a, WorkloadConditions) and a.conditions[0][0] == "Finished"
                   for a in reconcile(group, _group_workload(role, 2, ["a", "b"]), FLAVORS))


def _ready(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return pod


def test_a_group_is_ready_only_when_as_many_members_as_it_counts_are() -> None:
    fast = {pods.GROUP_FAST_ADMISSION: "true"}
    first = _ready(_member("web-0", total=3, gated=False, phase="Running", annotations=fast))
    assert not pods.PodGroup("ns", "g", [first]).pods_ready()  # 1 of 3: the others are not even created
    rest = [_ready(_member(f"web-{i}", total=3, gated=False, phase="Running", annotations=fast)) for i in (1, 2)]
    assert pods.PodGroup("ns", "g", [first, *rest]).pods_ready()


def test_the_pod_webhook_names_a_statefulsets_pod_into_its_owners_group() -> None:
    pod = _new_pod(labels={"kueue.x-k8s.io/queue-name": "lq"},
                   annotations={pods.SUSPENDED_BY_PARENT: "statefulset", pods.ROLE_HASH: "main"},
                   ownerReferences=[{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s-1",
                                     "controller": True}])
    ops = pods.pod_defaults(pod, registry.enabled(("statefulset",)), False, owner_marks=statefulset.pod_marks)
    labels = {op["path"].rsplit("/", 1)[1].replace("~1", "/"): op["value"] for op in ops
              if op["path"].startswith("/metadata/labels/")}
    name = statefulset.workload_name("db", "s-1")
    assert labels == {pods.MANAGED_LABEL: "true", pods.GROUP_NAME_LABEL: name,
                      "kueue.x-k8s.io/prebuilt-workload-name": name}
    assert not any(op["path"].startswith("/metadata/annotations") for op in ops)  # its role is main already


def test_a_statefulsets_group_waits_for_the_workload_its_statefulset_makes() -> None:
    marks = {pods.GROUP_FAST_ADMISSION: "true", pods.GROUP_SERVING: "true", pods.ROLE_HASH: "main"}
    first = _pod("db-0", labels={pods.GROUP_NAME_LABEL: "statefulset-db-x",
                                 "kueue.x-k8s.io/prebuilt-workload-name": "statefulset-db-x"},
                 annotations={pods.GROUP_TOTAL_COUNT: "2", **marks})
    group = pods.PodGroup("ns", "statefulset-db-x", [first])
    assert reconcile(group, None, FLAVORS) == []
    workload = _group_workload("main", 2, [])
    actions = reconcile(group, workload, FLAVORS)
    assert [o["name"] for o in actions[0].body["metadata"]["ownerReferences"]] == ["db-0"]


def test_a_group_missing_a_member_is_waiting_for_replacement_pods_until_one_comes() -> None:
    role = pods.role_hash(_member("a")["spec"])
    workload = _group_workload(role, 2, ["a", "b"])
    workload["metadata"]["uid"] = "w-1"
    failed = _member("a", gated=False, phase="Failed")
    (waiting,) = reconcile(pods.PodGroup("ns", "g", [failed, _member("b", gated=False, phase="Running")]),
                           workload, FLAVORS)
    assert isinstance(waiting, WorkloadConditions) and waiting.manager == pods.REPLACEMENT_MANAGER
    assert waiting.conditions == (("WaitingForReplacementPods", True, "PodsFailed", "Some Failed pods need replacement"),)
    workload["status"]["conditions"].append({"type": "WaitingForReplacementPods", "status": "True",
                                             "reason": "PodsFailed", "message": "Some Failed pods need replacement"})
    replaced = pods.PodGroup("ns", "g", [failed, _member("b", gated=False, phase="Running"),
                                         _member("c", gated=False, phase="Running")])
    done = [a for a in reconcile(replaced, workload, FLAVORS) if isinstance(a, WorkloadConditions)]
    assert [a.conditions for a in done] == [(("WaitingForReplacementPods", False, "PodsReady", "No pods need replacement"),)]
    # a Workload that never missed a member never gets the condition
    whole = pods.PodGroup("ns", "g", [_member("a", gated=False, phase="Running"), _member("b", gated=False, phase="Running")])
    assert not any(isinstance(a, WorkloadConditions) for a in reconcile(whole, _group_workload(role, 2, ["a", "b"]), FLAVORS))


def test_a_running_group_whose_execution_limit_changed_is_stopped_and_its_workload_replaced() -> None:
    """Upstream's equivalence for groups: the members' max-exec-time-seconds against the Workload's."""
    role = pods.role_hash(_member("a")["spec"])
    workload = _group_workload(role, 2, ["a", "b"])
    limit = {"kueue.x-k8s.io/max-exec-time-seconds": "60"}
    running = [_pod(n, labels={pods.GROUP_NAME_LABEL: "g", **limit}, annotations={pods.GROUP_TOTAL_COUNT: "2"},
                    gated=False, phase="Running") for n in ("a", "b")]
    actions = reconcile(pods.PodGroup("ns", "g", running), workload, FLAVORS)
    deletes = [(a.kind, a.name) for a in actions if isinstance(a, Delete)]
    assert deletes == [("Pod", "a"), ("Pod", "b"), ("Workload", "g")]  # the group stopped, its Workload replaced
    workload["spec"]["maximumExecutionTimeSeconds"] = 60
    assert not any(isinstance(a, Delete) for a in reconcile(pods.PodGroup("ns", "g", running), workload, FLAVORS))
