"""A Workload's job found by its owner's UID whatever the managed rules say now (``owners.job_runs``), and
the Workloads of an earlier object of a job's name (``owners.predecessors``), read from hand-made caches.

The managed rules here: ``managedJobsNamespaceSelector`` selects the namespaces labelled ``kueue=on``;
namespace ``on`` carries it, ``off`` does not (a namespace relabelled after its job started). Each
expectation is worked out from the rule: a managed job counts (its reconciler reports the stop); one no
longer managed counts until it is suspended, finished or being deleted with nothing active, or gone; an
object under the owner's name with another UID is not the Workload's job."""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs import owners
from pykueue.controller.jobs.reconciler import GROUP_PREFIX, JobKeys, PodKeys, Rules
from pykueue.engine.model import LabelSelector
from pykueue.jobs import managed
from pykueue.jobs.job.generic import STOPPING_ANNOTATION, Job
from pykueue.jobs.pod import groups as pods

LABELS = {"on": {"kueue": "on"}, "off": {}}
RULES = Rules(scope=managed.Scope(LabelSelector(match_labels={"kueue": "on"}), LABELS.get))
QUEUED = {"kueue.x-k8s.io/queue-name": "lq"}


def _job(namespace: str, uid: str = "u1", *, suspend: bool = False, active: int = 1, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": namespace, "uid": uid, "labels": dict(QUEUED)},
            "spec": {"suspend": suspend, "parallelism": 1}, "status": {"active": active, **status}}


def _workload(namespace: str, *owners_: tuple[str, str, str, str], name: str = "job-j-1") -> dict[str, Any]:
    """Owned by each (apiVersion, kind, name, uid)."""
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [
        {"apiVersion": v, "kind": k, "name": n, "uid": u, "controller": True} for v, k, n, u in owners_]}}


def _kinds(jobs: dict[str, Any], *, synced: bool = True, pod_store: dict[str, Any] | None = None,
           pods_watched: bool = True) -> owners.Kinds:
    job_keys = JobKeys(jobs, RULES)
    pod_keys = PodKeys(pod_store or {}, RULES)
    for pod in (pod_store or {}).values():
        pod_keys.track(pod, deleted=False)
    return {("batch", "Job"): owners.Kind(jobs, synced, job_keys.load, Job),
            owners.POD: owners.Kind(pod_keys.pods, synced, pod_keys.load, pods.Pod,
                                    group_managed=lambda k: pod_keys.load(GROUP_PREFIX + k),
                                    group=lambda k: pod_keys.group(GROUP_PREFIX + k)) if pods_watched else None,
            ("ray.io", "RayJob"): None}  # a job kind whose integration is off: not watched


def _owned_by_job(namespace: str, uid: str = "u1") -> dict[str, Any]:
    return _workload(namespace, ("batch/v1", "Job", "j", uid))


def test_a_managed_job_counts_whatever_its_state() -> None:
    """Kueue manages it: its reconciler reports the stop (JobStopped), the lookup only says it is there."""
    running = {"on/j": _job("on")}
    assert JobKeys(running, RULES).load("on/j") is not None  # the rule: namespace "on" is selected
    assert owners.job_runs(_owned_by_job("on"), _kinds(running)) is True
    stopped = {"on/j": _job("on", suspend=True, active=0)}
    assert owners.job_runs(_owned_by_job("on"), _kinds(stopped)) is True


def test_a_job_no_longer_managed_counts_while_it_may_run() -> None:
    """Namespace "off" is left out: Kueue skips the Job and never stops it, so it counts until nothing
    of it may run: unsuspended, or suspended with pods still active, it runs; suspended with none
    active, finished with none active, or gone, it does not."""
    assert JobKeys({"off/j": _job("off")}, RULES).load("off/j") is None  # not Kueue's now
    for job, runs in ((_job("off"), True),
                      (_job("off", suspend=True, active=2), True),
                      (_job("off", suspend=True, active=0, terminating=1), True),
                      (_job("off", suspend=True, active=0), False),
                      (_job("off", active=0, conditions=[{"type": "Complete", "status": "True"}]), False)):
        assert owners.job_runs(_owned_by_job("off"), _kinds({"off/j": job})) is runs, job
    assert owners.job_runs(_owned_by_job("off"), _kinds({})) is False  # gone


def test_a_suspended_job_part_way_through_kueues_stop_runs_nothing() -> None:
    """Kueue had begun stopping it (its stopping annotation on) when the namespace was left out: the
    Job is suspended and nothing of it active, so nothing of it runs, whatever the template still says."""
    job = _job("off", suspend=True, active=0)
    job["metadata"]["annotations"] = {STOPPING_ANNOTATION: "true"}
    assert not Job(job).is_suspended()  # the framework's reading: the stop is not finished
    assert owners.job_runs(_owned_by_job("off"), _kinds({"off/j": job})) is False


def test_an_object_of_the_same_name_with_another_uid_is_not_the_workloads_job() -> None:
    """The Job was deleted and re-created under its name: the running successor (managed or not) is not
    the old Workload's job."""
    for namespace in ("on", "off"):
        successor = {f"{namespace}/j": _job(namespace, uid="u2")}
        assert owners.job_runs(_owned_by_job(namespace, uid="u1"), _kinds(successor)) is False
        assert owners.job_runs(_owned_by_job(namespace, uid="u2"), _kinds(successor)) is True


def test_not_known_while_a_cache_is_not_filled_or_its_kind_is_not_watched() -> None:
    assert owners.job_runs(_owned_by_job("off"), _kinds({}, synced=False)) is None
    ray_owned = _workload("on", ("ray.io/v1", "RayJob", "r", "u9"))
    assert owners.job_runs(ray_owned, _kinds({})) is None  # its integration is off: held, never released
    pod_owned = _workload("on", ("v1", "Pod", "p", "u9"))
    assert owners.job_runs(pod_owned, _kinds({}, pods_watched=False)) is None


def test_an_owner_of_no_job_kind_names_no_job() -> None:
    """A bare Workload, or one owned by a kind pykueue runs no integration for: nothing of it runs."""
    assert owners.job_runs(_workload("on"), _kinds({})) is False
    assert owners.job_runs(_workload("on", ("v1", "ConfigMap", "c", "u5")), _kinds({})) is False


def _pod(name: str, namespace: str, uid: str, *, group: str = "", phase: str = "Running", gated: bool = False
         ) -> dict[str, Any]:
    labels = {pods.MANAGED_LABEL: "true", **({pods.GROUP_NAME_LABEL: group} if group else {})}
    spec: dict[str, Any] = {"schedulingGates": [{"name": pods.GATE}]} if gated else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": uid,
                                                          "labels": labels}, "spec": spec, "status": {"phase": phase}}


def test_a_plain_pod_no_longer_managed_counts_until_it_is_terminal_gated_or_gone() -> None:
    workload = _workload("off", ("v1", "Pod", "p", "u3"))
    for pod, runs in ((_pod("p", "off", "u3"), True), (_pod("p", "off", "u3", phase="Succeeded"), False),
                      (_pod("p", "off", "u3", phase="Failed"), False), (_pod("p", "off", "u3", gated=True), False),
                      (_pod("p", "off", "u4"), False)):  # the last: a successor of the same name
        assert owners.job_runs(workload, _kinds({}, pod_store={"off/p": pod})) is runs, pod
    assert owners.job_runs(workload, _kinds({}, pod_store={})) is False


def test_a_pod_group_no_longer_managed_counts_while_a_member_runs() -> None:
    """A group's Workload is named after the group and stands for its Pods, whoever owns it now."""
    workload = _workload("off", ("v1", "Pod", "g-0", "u0"), name="g")
    workload["metadata"]["annotations"] = {pods.IS_GROUP_WORKLOAD: "true"}
    one_runs = {"off/g-0": _pod("g-0", "off", "u0", group="g", phase="Succeeded"),
                "off/g-1": _pod("g-1", "off", "u1", group="g")}
    assert owners.job_runs(workload, _kinds({}, pod_store=one_runs)) is True
    done = {**one_runs, "off/g-1": _pod("g-1", "off", "u1", group="g", phase="Succeeded")}
    assert owners.job_runs(workload, _kinds({}, pod_store=done)) is False
    assert owners.job_runs(workload, _kinds({}, pod_store={})) is False
    managed_group = {**workload, "metadata": {**workload["metadata"], "namespace": "on"}}
    assert owners.job_runs(managed_group, _kinds({}, pod_store={})) is True  # its reconciler reports the stop


def test_the_owner_index_follows_the_cache() -> None:
    index = owners.OwnerIndex()
    index.update("on/w1", _owned_by_job("on", "u1"))
    index.update("on/w2", _owned_by_job("on", "u2"))
    assert index.owned("batch", "Job", "on", "j") == ["on/w1", "on/w2"]
    index.update("on/w1", _workload("on", ("batch/v1", "Job", "k", "u7")))  # its owners changed
    assert index.owned("batch", "Job", "on", "j") == ["on/w2"] and index.owned("batch", "Job", "on", "k") == ["on/w1"]
    index.update("on/w2", None)
    assert index.owned("batch", "Job", "on", "j") == [] and len(index) == 1


def test_the_workloads_of_an_earlier_object_of_the_same_name() -> None:
    """``w1`` is owned by Job j as it was (u1), ``w2`` by j as it is (u2), ``w3`` by another Job: only
    ``w1`` is a predecessor of j (u2); a Workload also owned by j as it is, or a group's, is not."""
    workloads = {"on/w1": _owned_by_job("on", "u1"), "on/w2": _owned_by_job("on", "u2"),
                 "on/w3": _workload("on", ("batch/v1", "Job", "k", "u1")),
                 "on/both": _workload("on", ("batch/v1", "Job", "j", "u1"), ("batch/v1", "Job", "j", "u2")),
                 "on/group": {**_owned_by_job("on", "u1"),
                              "metadata": {**_owned_by_job("on", "u1")["metadata"],
                                           "annotations": {pods.IS_GROUP_WORKLOAD: "true"}}}}
    index = owners.OwnerIndex()
    for key, workload in workloads.items():
        index.update(key, workload)
    now = _job("on", uid="u2")
    assert [w["metadata"]["name"] for w in owners.predecessors(index, workloads, now)] == ["job-j-1"]
    assert owners.predecessors(index, workloads, now)[0] is workloads["on/w1"]
    assert [w is workloads["on/w2"] for w in owners.predecessors(index, workloads, _job("on", uid="u1"))] == [True]
    assert owners.predecessors(index, workloads, {**now, "metadata": {**now["metadata"], "uid": ""}}) == []
