"""The keys the job side reconciles: which object a key stands for, and which keys a Workload's owners
wake (a Job, a plain Pod, or a pod group as ``group:NS/NAME``)."""

from __future__ import annotations

from typing import Any

from pykueue.controller.jobs.reconciler import GROUP_PREFIX, JobKeys, PodKeys
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod import groups as pods


def _job(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "labels": labels}, "spec": {}}


def test_a_job_is_loaded_only_when_kueue_manages_it() -> None:
    queued = {"ns/j": _job({"kueue.x-k8s.io/queue-name": "lq"})}
    assert isinstance(JobKeys(queued, False).load("ns/j"), Job)
    assert JobKeys(queued, False, enabled=False).load("ns/j") is None  # batch/job not in frameworks
    plain = {"ns/j": _job({})}
    assert JobKeys(plain, False).load("ns/j") is None
    assert isinstance(JobKeys(plain, True).load("ns/j"), Job)  # manageJobsWithoutQueueName
    assert JobKeys(queued, False).load("ns/other") is None


def _pod(name: str, group: str | None = None, managed: bool = True) -> dict[str, Any]:
    labels = {pods.MANAGED_LABEL: "true"} if managed else {}
    if group:
        labels[pods.GROUP_NAME_LABEL] = group
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}, "spec": {}}


def test_pods_and_groups_have_their_own_keys() -> None:
    store = {"ns/a": _pod("a"), "ns/g-0": _pod("g-0", "g"), "ns/g-1": _pod("g-1", "g"), "ns/x": _pod("x", managed=False)}
    keys = PodKeys(store)
    assert [keys.track(p, deleted=False) for p in store.values()] == ["ns/a", f"{GROUP_PREFIX}ns/g", f"{GROUP_PREFIX}ns/g",
                                                                     "ns/x"]
    assert isinstance(keys.load("ns/a"), pods.Pod)
    assert keys.load("ns/x") is None  # not the webhook's: no managed label
    group = keys.load(f"{GROUP_PREFIX}ns/g")
    assert isinstance(group, pods.PodGroup) and [p["metadata"]["name"] for p in group.pods] == ["g-0", "g-1"]
    del store["ns/g-0"]
    keys.track(_pod("g-0", "g"), deleted=True)
    group = keys.load(f"{GROUP_PREFIX}ns/g")
    assert isinstance(group, pods.PodGroup) and [p["metadata"]["name"] for p in group.pods] == ["g-1"]


def test_a_workload_wakes_the_keys_of_its_owners() -> None:
    keys = PodKeys({})
    single = {"metadata": {"name": "pod-a-1", "namespace": "ns",
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "a"}]}}
    assert keys.keys_for_workload(single) == ["ns/a"]
    group = {"metadata": {"name": "g", "namespace": "ns", "annotations": {pods.IS_GROUP_WORKLOAD: "true"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": n} for n in ("g-0", "g-1")]}}
    assert keys.keys_for_workload(group) == [f"{GROUP_PREFIX}ns/g"]
    # a StatefulSet's, made before any of its Pods owns it: its group is woken all the same
    sts_made = {"metadata": {"name": "statefulset-db-1", "namespace": "ns", "annotations": {pods.IS_GROUP_WORKLOAD: "true"},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}]}}
    assert keys.keys_for_workload(sts_made) == [f"{GROUP_PREFIX}ns/statefulset-db-1"]
    job_owned = {"metadata": {"name": "job-j-1", "namespace": "ns",
                              "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j"}]}}
    assert keys.keys_for_workload(job_owned) == []
    assert JobKeys({}, False).keys_for_workload(job_owned) == ["ns/j"]


def test_a_leaderworkerset_pod_waits_for_its_group_before_it_is_queued() -> None:
    """A LWS's Pod is gated by the webhook before the LWS's reconciler names its group: until then it
    is nobody's single-Pod Workload (upstream skips it: it has no managed label yet); once labelled it
    is its group's member."""
    waiting = _pod("infer-0")
    waiting["metadata"]["annotations"] = {pods.SUSPENDED_BY_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset"}
    keys = PodKeys({"ns/infer-0": waiting})
    assert keys.track(waiting, deleted=False) == "ns/infer-0"
    assert keys.load("ns/infer-0") is None
    labelled = _pod("infer-0", "leaderworkerset-infer-0-abcde")
    labelled["metadata"]["annotations"] = dict(waiting["metadata"]["annotations"])
    keys.pods["ns/infer-0"] = labelled
    key = keys.track(labelled, deleted=False)
    assert key == f"{GROUP_PREFIX}ns/leaderworkerset-infer-0-abcde" and isinstance(keys.load(key), pods.PodGroup)
