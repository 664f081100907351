"""Which jobs Kueue manages, for every kind: managedJobsNamespaceSelector and manageJobsWithoutQueueName in
the job reconciler and the mutating webhooks, children of managed jobs, LocalQueueDefaulting and
labelKeysToCopy. Each expectation is worked out from upstream v0.18's jobframework (reconciler.go's
ReconcileGenericJob with ManagedJobsNamespaceSelectorAlwaysRespected on, defaults.go's
WorkloadShouldBeSuspended and ApplyDefaultLocalQueue, FindAncestorJobManagedByKueue), the Pod webhook's
Default, and config validation's validateManagedJobsNamespaceSelector."""

from __future__ import annotations

import base64
import json
from typing import Any

from pykueue.api.configuration import config_v1beta2
from pykueue.api.models.config import ConfigurationV1beta2
from pykueue.controller.jobs.reconciler import JobKeys, ObjectKeys, PodKeys, Rules
from pykueue.controller.webhooks import admission
from pykueue.engine import model
from pykueue.jobs import framework, managed, registry
from pykueue.jobs.framework import CreateWorkload, Note
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.registry import BY_KIND

QUEUE = "kueue.x-k8s.io/queue-name"
# namespace -> labels, as the Namespace informer has them ("left-out" lacks the opt-in label)
NAMESPACES = {"team": {"kueue": "on"}, "left-out": {}, "kube-system": {}}
OPT_IN = model.LabelSelector(match_labels={"kueue": "on"})


def _config(**fields: Any) -> tuple[model.Config, list[tuple[str, str]]]:
    doc = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", **fields}
    return config_v1beta2(ConfigurationV1beta2.model_validate(doc))


def _rules(manage_all: bool, selector: model.LabelSelector | None = OPT_IN,
           frameworks: tuple[str, ...] = ("batch/job",), label_keys: tuple[str, ...] = ()) -> Rules:
    return Rules(manage_all, managed.Scope(selector, NAMESPACES.get), registry.enabled(frameworks), label_keys)


def _job(namespace: str = "team", labels: dict[str, str] | None = None, owner: str | None = None,
         name: str = "j") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "ray.io/v1" if owner.startswith("Ray") else "batch/v1",
                                    "kind": owner, "name": "parent", "uid": "p", "controller": True}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}


def _review(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {"uid": "1", "operation": "CREATE", "namespace": namespace, "object": obj}


def _ops(out: dict[str, Any]) -> list[dict[str, Any]]:
    assert out["allowed"]
    return json.loads(base64.b64decode(out["patch"])) if "patch" in out else []


# ---- the Configuration -------------------------------------------------------------------------------


def test_the_selector_defaults_to_every_namespace_but_kube_system_and_the_controllers() -> None:
    config, errors = _config()
    assert errors == [] and config.managed_jobs_namespace_selector == managed.DEFAULT_SELECTOR
    scope = managed.Scope(config.managed_jobs_namespace_selector)
    assert [scope.selected(ns) for ns in ("team", "kube-system", "kueue-system")] == [True, False, False]
    # upstream defaults the selector from the Configuration's namespace
    moved, _ = _config(namespace="kueue-prod")
    scope = managed.Scope(moved.managed_jobs_namespace_selector)
    assert [scope.selected(ns) for ns in ("kueue-system", "kueue-prod")] == [True, False]


def test_a_selector_that_matches_a_system_namespace_is_refused() -> None:
    config, errors = _config(managedJobsNamespaceSelector={"matchLabels": {"kueue": "on"}})
    assert errors == [] and config.managed_jobs_namespace_selector == OPT_IN
    _, errors = _config(managedJobsNamespaceSelector={})  # matches everything
    assert errors == [("managedJobsNamespaceSelector", 'Invalid value: {}: should not match the "kube-system" namespace'),
                      ("managedJobsNamespaceSelector", 'Invalid value: {}: should not match the "kueue-system" namespace')]
    _, errors = _config(managedJobsNamespaceSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert errors == [("managedJobsNamespaceSelector.matchExpressions[0].values",
                       "Required value: must be specified when `operator` is 'In' or 'NotIn'")]


def test_label_keys_to_copy_are_read_from_the_integrations() -> None:
    config, errors = _config(integrations={"frameworks": ["batch/job"], "labelKeysToCopy": ["team", "cost"]})
    assert errors == [] and config.label_keys_to_copy == ("team", "cost")
    _, errors = _config(integrations={"frameworks": ["batch/job"], "labelKeysToCopy": "team"})
    assert errors == [("integrations.labelKeysToCopy", 'Invalid value: "team": must be a list of label keys')]


# ---- the reconciler ----------------------------------------------------------------------------------


def test_the_reconciler_leaves_every_job_of_a_namespace_left_out_alone() -> None:
    """ManagedJobsNamespaceSelectorAlwaysRespected (beta, on): queue label or not."""
    store = {f"{ns}/j": _job(ns, labels) for ns, labels in (("team", {}), ("left-out", {}))}
    keys = JobKeys(store, _rules(manage_all=True))
    assert isinstance(keys.load("team/j"), Job)
    assert keys.load("left-out/j") is None  # the row: made before the controller started, left alone
    queued = {"left-out/j": _job("left-out", {QUEUE: "lq"}), "team/j": _job("team", {QUEUE: "lq"})}
    keys = JobKeys(queued, _rules(manage_all=False))
    assert keys.load("left-out/j") is None and isinstance(keys.load("team/j"), Job)
    # without a selector (nil) no namespace is left out
    assert isinstance(JobKeys(queued, _rules(False, selector=None)).load("left-out/j"), Job)


def test_a_namespace_not_seen_yet_is_read_by_its_name_label() -> None:
    store = {"kube-system/j": _job("kube-system", {QUEUE: "lq"}), "new/j": _job("new", {QUEUE: "lq"})}
    keys = JobKeys(store, _rules(False, selector=managed.DEFAULT_SELECTOR))
    assert keys.load("kube-system/j") is None and isinstance(keys.load("new/j"), Job)


def test_a_job_a_managed_job_owns_is_never_queued_by_itself() -> None:
    """KubeRay's submitter Job (owned by its RayJob), a Job owned by a Job: queued with the owner."""
    store = {"team/sub": _job(labels={}, owner="RayJob", name="sub"),
             "team/child": _job(labels={QUEUE: "lq"}, owner="Job", name="child")}
    rules = _rules(True, frameworks=("batch/job", "ray.io/rayjob"))
    keys = JobKeys(store, rules)
    assert keys.load("team/sub") is None and keys.load("team/child") is None
    # the RayJob integration off: the RayJob is not Kueue's, so its Job is queued by itself
    assert isinstance(JobKeys(store, _rules(True)).load("team/sub"), Job)


def test_ray_objects_and_pods_follow_the_selector_too() -> None:
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
               "metadata": {"name": "rc", "namespace": "left-out", "labels": {QUEUE: "lq"}}, "spec": {}}
    assert ObjectKeys(BY_KIND["RayCluster"], {"left-out/rc": cluster}, _rules(False)).load("left-out/rc") is None
    pod = {"metadata": {"name": "p", "namespace": "left-out", "labels": {pods.MANAGED_LABEL: "true"}}, "spec": {}}
    assert PodKeys({"left-out/p": pod}, _rules(False)).load("left-out/p") is None
    assert PodKeys({"left-out/p": pod}, _rules(False, selector=None)).load("left-out/p") is not None


# ---- the webhooks ------------------------------------------------------------------------------------


def test_the_job_webhook_suspends_as_upstreams_workload_should_be_suspended() -> None:
    scope = managed.Scope(OPT_IN, NAMESPACES.get)
    mutate = admission.mutator("Job", ("batch/job",), True, admission.no_default_queue, scope)
    suspend = [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert _ops(mutate(_review(_job("team"), "team"))) == suspend
    assert _ops(mutate(_review(_job("left-out"), "left-out"))) == []  # no queue label, namespace left out
    # a queue label is always suspended (the webhook configuration already leaves kube-system out)
    assert _ops(mutate(_review(_job("left-out", {QUEUE: "lq"}), "left-out"))) == suspend
    ray_on = admission.mutator("Job", ("batch/job", "ray.io/rayjob"), True, admission.no_default_queue, scope)
    assert _ops(ray_on(_review(_job(labels={QUEUE: "lq"}, owner="RayJob"), "team"))) == []  # the RayJob's


def test_the_pod_webhook_applies_the_selector_to_every_pod_not_handed_over() -> None:
    scope = managed.Scope(OPT_IN, NAMESPACES.get)
    mutate = admission.mutator("Pod", ("pod",), False, admission.no_default_queue, scope)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {QUEUE: "lq"}},
           "spec": {"containers": [{"name": "c"}]}}
    assert _ops(mutate(_review(pod, "left-out"))) == []
    assert any(op["path"] == "/spec/schedulingGates" for op in _ops(mutate(_review(pod, "team"))))
    handed = {**pod, "metadata": {**pod["metadata"], "annotations": {pods.SUSPENDED_BY_PARENT: "deployment"}}}
    assert _ops(mutate(_review(handed, "left-out"))) != []  # its Deployment's webhook decided
    ray_pod = {**pod, "metadata": {**pod["metadata"], "ownerReferences": [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "u", "controller": True}]}}
    on = admission.mutator("Pod", ("pod", "ray.io/raycluster"), True, admission.no_default_queue, scope)
    assert _ops(on(_review(ray_pod, "team"))) == []  # Ray's Pods are their RayCluster's


def test_every_kind_is_put_in_its_namespaces_default_local_queue() -> None:
    """LocalQueueDefaulting (locked on in v0.18): Job, Pod, Deployment, StatefulSet, RayJob, RayCluster."""
    frameworks = ("batch/job", "pod", "deployment", "statefulset", "ray.io/rayjob", "ray.io/raycluster")
    label = {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"}
    template = {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "c"}]}}
    objects = {
        "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}},
                "spec": {"containers": [{"name": "c"}]}},
        "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {}},
                       "spec": {"template": template}},
        "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "labels": {}},
                        "spec": {"replicas": 2, "template": template}},
        "RayJob": {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "labels": {}},
                   "spec": {"rayClusterSpec": {}}},
        "RayCluster": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c", "labels": {}},
                       "spec": {}},
        "Job": _job(labels={}),
    }
    for kind, obj in objects.items():
        mutate = admission.mutator(kind, frameworks, False, lambda ns: ns == "team")
        ops = _ops(mutate(_review(obj, "team")))
        assert ops[0] == label, kind
        assert len(ops) > 1, kind  # then queued: suspended, gated, or its pod template labelled
        assert _ops(mutate(_review(obj, "elsewhere"))) == [], kind  # no LocalQueue named default there


# ---- labelKeysToCopy ---------------------------------------------------------------------------------


def test_the_workload_carries_the_listed_labels_of_its_job() -> None:
    job = _job(labels={QUEUE: "lq", "team": "a", "other": "x"})
    job["spec"]["suspend"] = True
    (create,) = framework.reconcile(Job(job), None, {}, ("team", "absent"))
    assert isinstance(create, CreateWorkload)
    labels = create.manifest["metadata"]["labels"]
    assert labels["team"] == "a" and "other" not in labels and "absent" not in labels
    assert labels["kueue.x-k8s.io/job-uid"] == "uid-j"  # its own label is kept


def test_pods_of_a_group_that_disagree_on_a_copied_label_are_not_queued() -> None:
    def member(name: str, team: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "team", "uid": name, "creationTimestamp": name,
                             "labels": {QUEUE: "lq", pods.MANAGED_LABEL: "true", pods.GROUP_NAME_LABEL: "g",
                                        "team": team},
                             "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
                "spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": pods.GATE}]},
                "status": {"phase": "Pending"}}
    group = pods.PodGroup("team", "g", [member("a", "x"), member("b", "x")])
    (create,) = framework.reconcile(group, None, {}, ("team",))
    assert isinstance(create, CreateWorkload) and create.manifest["metadata"]["labels"]["team"] == "x"
    group = pods.PodGroup("team", "g", [member("a", "x"), member("b", "y")])
    note, *warned = framework.reconcile(group, None, {}, ("team",))
    assert isinstance(note, Note) and note.warning and "team" in note.fields["error"]
    assert [type(w) for w in warned] == [framework.Warn]  # and a Warning event on the group's Pod


# ---- the queue labels on admitted pods ---------------------------------------------------------------


def test_an_admitted_jobs_pods_carry_its_local_and_cluster_queue_names() -> None:
    """AssignQueueLabelsForPods (on by default): podset, local-queue-name and cluster-queue-name labels;
    a ClusterQueue name that is no DNS-1123 label is left out."""
    job = _job(labels={QUEUE: "lq"})
    job["spec"]["suspend"] = True

    def started(cluster_queue: str) -> dict[str, str]:
        wl = {"metadata": {"name": "w", "namespace": "team"}, "spec": {"queueName": "lq"},
              "status": {"conditions": [{"type": "QuotaReserved", "status": "True"},
                                        {"type": "Admitted", "status": "True"}],
                         "admission": {"clusterQueue": cluster_queue,
                                       "podSetAssignments": [{"name": "main", "count": 1, "flavors": {}}]}}}
        (start, *_) = framework.reconcile(Job(job), wl, {})
        body = start.obj if hasattr(start, "obj") and start.obj is not None else start.change(job)
        return body["spec"]["template"]["metadata"]["labels"]

    assert started("cq") == {"kueue.x-k8s.io/podset": "main", "kueue.x-k8s.io/local-queue-name": "lq",
                             "kueue.x-k8s.io/cluster-queue-name": "cq"}
    assert "kueue.x-k8s.io/cluster-queue-name" not in started("team.a")  # a subdomain, not a label


# ---- FinishOrphanedWorkloads -------------------------------------------------------------------------


def _orphan(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job-j-1", "namespace": "team", "uid": "w",
                         "labels": {"kueue.x-k8s.io/job-uid": "uid-j"}, **meta},
            "status": {"conditions": [{"type": "Admitted", "status": "True"}]}}


def test_a_workload_whose_job_was_deleted_with_orphan_propagation_is_finished() -> None:
    """isOrphanedWorkload: no owner, the job-uid label, not being deleted (FinishOrphanedWorkloads on);
    finished with reason OwnerNotFound, after which the finalizer goes as for any finished Workload."""
    import asyncio

    from pykueue.controller.jobs.reconciler import ORPHAN_PREFIX, JobReconciler, orphaned
    from tests.controller.fakes import FakeKube

    orphan = _orphan()
    assert orphaned(orphan)
    owned = _orphan(ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "uid-j"}])
    assert not orphaned(owned) and not orphaned(_orphan(deletionTimestamp="2026-01-01T00:00:00Z"))
    assert not orphaned({"metadata": {"name": "made-by-hand", "namespace": "team"}})  # no job ever owned it
    finished = _orphan()
    finished["status"]["conditions"].append({"type": "Finished", "status": "True"})
    assert not orphaned(finished)
    keys = JobKeys({}, False)
    assert keys.keys_for_workload(orphan) == [f"{ORPHAN_PREFIX}team/job-j-1"]
    assert keys.keys_for_workload(owned) == ["team/j"]

    kube = FakeKube()
    sync = JobReconciler(kube, keys, {"team/job-j-1": orphan}, {}, lambda: None, lambda: 0.0)  # type: ignore[arg-type]
    asyncio.run(sync.reconcile(f"{ORPHAN_PREFIX}team/job-j-1"))
    (written,) = kube.applied
    (cond,) = written["status"]["conditions"]
    assert (written["metadata"]["uid"], cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "w", "Finished", "True", "OwnerNotFound", "The workload's owner no longer exists")
    sync.workloads["team/job-j-1"] = owned  # adopted again meanwhile: nothing to write
    asyncio.run(sync.reconcile(f"{ORPHAN_PREFIX}team/job-j-1"))
    assert len(kube.applied) == 1


# ---- prebuilt Workloads ------------------------------------------------------------------------------


def test_a_prebuilt_workload_is_adopted_never_created() -> None:
    """ensureOneWorkload / handleJobWithNoWorkload for kueue.x-k8s.io/prebuilt-workload-name: missing or
    controlled by another object, the job is kept stopped and nothing is created; found, the job becomes
    its controller owner (with the job-uid label); out of sync with the job, it is finished OutOfSync and
    the running job stopped."""
    from pykueue.jobs import prebuilt
    from pykueue.jobs.framework import Patch, WorkloadConditions

    running = Job(_job(labels={QUEUE: "lq", "kueue.x-k8s.io/prebuilt-workload-name": "pre"}))
    assert prebuilt.name_for(running) == "pre"
    stop, *_, note = prebuilt.adopt(running, None)
    assert stop == Patch("Job", "team", "j", {"spec": {"suspend": True}}) and note.fields["why"] == "missing"
    built = running.build_workload()
    assert built is not None
    wl = {**built, "metadata": {"name": "pre", "namespace": "team", "uid": "w", "resourceVersion": "3"}}
    other = {**wl, "metadata": {**wl["metadata"], "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "other", "controller": True}]}}
    assert prebuilt.adopt(running, other)[-1].fields["why"] == "controlled by another object"
    (patch, _) = prebuilt.adopt(running, wl)
    assert isinstance(patch, Patch) and (patch.kind, patch.name) == ("Workload", "pre")
    assert patch.body["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "uid-j", "controller": True,
         "blockOwnerDeletion": True}]
    assert patch.body["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "uid-j"}
    owned = {**wl, "metadata": {**wl["metadata"], "ownerReferences": patch.body["metadata"]["ownerReferences"]}}
    assert prebuilt.adopt(running, owned) is None  # in sync: the usual rule takes it from here
    bigger = {**owned, "spec": {**owned["spec"], "podSets": [{**owned["spec"]["podSets"][0], "count": 5}]}}
    finish, stop, *_ = prebuilt.adopt(running, bigger)
    assert isinstance(finish, WorkloadConditions) and finish.conditions == (
        ("Finished", True, "OutOfSync", "The prebuilt workload is out of sync with its user job"),)
    # left without a Workload, the running job is stopped (handleJobWithNoWorkload for a prebuilt one)
    assert stop == Patch("Job", "team", "j", {"spec": {"suspend": True}})


# ---- the priority-class label ------------------------------------------------------------------------


def test_the_job_webhook_refuses_removing_the_priority_class_label() -> None:
    """ValidateUpdateForWorkloadPriorityClassName: never removed, suspended or running (a 403 refusal)."""
    wpc = "kueue.x-k8s.io/priority-class"
    for suspend in (True, False):
        old = _job(labels={QUEUE: "lq", wpc: "high"})
        old["spec"]["suspend"] = suspend
        new = _job(labels={QUEUE: "lq"})
        new["spec"]["suspend"] = suspend
        out = admission.validator_for_jobs("Job", ("batch/job",))(
            {"uid": "1", "operation": "UPDATE", "object": new, "oldObject": old})
        assert not out["allowed"] and out["status"]["code"] == 403
        assert out["status"]["message"] == (f'metadata.labels[{wpc}]: Invalid value: "": WorkloadPriorityClass '
                                            "cannot be removed from a workload")


def test_a_running_child_is_suspended_while_its_owners_workload_is_not_admitted() -> None:
    """shouldSuspendChildJob: the owner's Workload missing (or not admitted, or finished) suspends a
    running child; admitted, the child runs; either way it gets no Workload of its own."""
    import asyncio

    from pykueue.controller.jobs.reconciler import JobReconciler
    from pykueue.jobs.framework.workload import workload_name_for_owner

    class Patches:
        def __init__(self) -> None:
            self.bodies: list[tuple[str, Any]] = []

        async def merge_patch(self, _res: Any, name: str, body: Any, _ns: str, _sub: Any = None) -> None:
            self.bodies.append((name, body))

    parent = _job(labels={QUEUE: "lq"}, name="parent")
    child = _job(labels={}, name="child")
    child["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "parent",
                                             "uid": "uid-parent", "controller": True}]
    store = {"team/parent": parent, "team/child": child}
    keys = JobKeys(store, _rules(False))
    owner_wl = "team/" + workload_name_for_owner("Job", "batch", "parent", "uid-parent")
    assert keys.child("team/child") == (child, owner_wl) and keys.load("team/child") is None
    assert keys.child("team/parent") is None
    kube = Patches()
    workloads: dict[str, Any] = {}
    sync = JobReconciler(kube, keys, workloads, {}, lambda: None, lambda: 0.0)  # type: ignore[arg-type]
    asyncio.run(sync.reconcile("team/child"))
    assert kube.bodies == [("child", {"spec": {"suspend": True}})]  # no Workload for its owner yet
    workloads[owner_wl] = {"metadata": {"name": owner_wl.split("/")[1], "namespace": "team"},
                           "status": {"conditions": [{"type": "Admitted", "status": "True"}],
                                      "admission": {"clusterQueue": "cq", "podSetAssignments": []}}}
    asyncio.run(sync.reconcile("team/child"))
    assert len(kube.bodies) == 1  # the owner's Workload is admitted: the child runs
    # the owner names no queue and not every job is Kueue's: the child is nobody's, left alone
    store["team/parent"] = _job(labels={}, name="parent")
    assert keys.child("team/child") is None
