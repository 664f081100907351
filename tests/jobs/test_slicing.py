"""An elastic Job's slices on the job side (upstream's EnsureWorkloadSlices), the Job webhook's gate and the
Workload webhook's scale-down rule. Each outcome worked out by hand from upstream's rules."""

from __future__ import annotations

import base64
import json
from typing import Any

from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.validation import workload_update
from pykueue.controller.webhooks.admission import mutator
from pykueue.jobs import slicing
from pykueue.jobs.framework.workload import ELASTIC_JOB_ANNOTATION
from pykueue.jobs.job.generic import Job
from pykueue.jobs.job.workload import workload_from_job, workload_name_for_job
from pykueue.jobs.ray.generic import RayObject
from pykueue.jobs.registry import FRAMEWORKS

ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}


def job(parallelism: int, generation: int = 1) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "generation": generation,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}, "annotations": dict(ELASTIC)},
            "spec": {"parallelism": parallelism, "completions": 10, "suspend": False,
                     "template": {"spec": {"restartPolicy": "Never", "containers": [
                         {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}


def workload(name: str, count: int, *, reserved: bool, created: str = "2026-01-01T00:00:00Z",
             replaces: str | None = None, evicted: bool = False) -> dict[str, Any]:
    annotations = dict(ELASTIC)
    if replaces:
        annotations[slicing.REPLACEMENT_FOR] = replaces
    conditions = [{"type": "QuotaReserved", "status": "True" if reserved else "False"}]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True"})
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created, "annotations": annotations,
                         "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u1"}]},
            "spec": {"podSets": [{"name": "main", "count": count}]},
            "status": {"conditions": conditions}}


def pod_sets(count: int) -> list[dict[str, Any]]:
    return [{"name": "main", "count": count}]


def test_the_same_size_keeps_the_slice() -> None:
    w = workload("w1", 3, reserved=True)
    out = slicing.ensure(pod_sets(3), [w])
    assert out.workload is w and not out.updates and out.replaces is None


def test_a_scale_down_updates_the_admitted_slice_in_place() -> None:
    out = slicing.ensure(pod_sets(2), [workload("w1", 3, reserved=True)])
    assert out.replaces is None and [u["spec"]["podSets"][0]["count"] for u in out.updates] == [2]
    assert out.workload is out.updates[0]


def test_a_scale_up_of_an_admitted_slice_makes_a_new_one_replacing_it() -> None:
    out = slicing.ensure(pod_sets(5), [workload("w1", 3, reserved=True)])
    assert out.workload is None and out.replaces == "ns/w1" and not out.updates


def test_a_pending_slice_follows_the_job_in_place() -> None:
    out = slicing.ensure(pod_sets(5), [workload("w1", 3, reserved=False)])
    assert out.replaces is None and out.updates[0]["spec"]["podSets"][0]["count"] == 5


def test_with_a_scale_up_pending_the_new_slice_stands_for_the_job() -> None:
    old = workload("w1", 3, reserved=True)
    new = workload("w2", 5, reserved=False, replaces="ns/w1")
    out = slicing.ensure(pod_sets(5), [old, new])
    assert out.workload is new and not out.finish
    out = slicing.ensure(pod_sets(6), [old, new])  # scaled again while pending: the new one follows
    assert out.updates[0]["metadata"]["name"] == "w2" and out.updates[0]["spec"]["podSets"][0]["count"] == 6
    old["status"]["conditions"].append({"type": "Admitted", "status": "True"})
    assert slicing.pending_scale_up(new, [old, new]) and not slicing.pending_scale_up(old, [old, new])


def test_an_old_slice_that_lost_its_quota_is_finished_out_of_sync() -> None:
    old = workload("w1", 3, reserved=False)
    new = workload("w2", 5, reserved=False, replaces="ns/w1")
    assert slicing.ensure(pod_sets(5), [old, new]).finish == [old]


def test_slices_are_found_by_owner_oldest_first_and_finished_ones_left_out() -> None:
    old = workload("b-old", 3, reserved=True, created="2026-01-01T00:00:00Z")
    new = workload("a-new", 5, reserved=False, created="2026-01-01T00:00:00Z", replaces="ns/b-old")
    done = workload("c", 1, reserved=True)
    done["status"]["conditions"].append({"type": "Finished", "status": "True"})
    other = workload("d", 1, reserved=True)
    other["metadata"]["ownerReferences"][0]["uid"] = "u2"
    # same second: the one the other replaces comes first
    assert [w["metadata"]["name"] for w in slicing.owned_not_finished([new, done, other, old], job(5))] == [
        "b-old", "a-new"]


def test_an_elastic_jobs_workload_is_named_per_generation_and_marked_elastic() -> None:
    first = workload_from_job(job(3, generation=1))
    second = workload_from_job(job(5, generation=2))
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert first["metadata"]["annotations"][ELASTIC_JOB_ANNOTATION] == "true"
    assert Job(job(3, generation=2)).workload_name() == second["metadata"]["name"]
    plain = job(3)
    del plain["metadata"]["annotations"]
    assert workload_from_job(plain)["metadata"]["name"] == workload_name_for_job("j", "u1")


def test_the_job_webhook_gates_an_elastic_jobs_pods() -> None:
    created = job(3)
    answer = mutator("Job", FRAMEWORKS, False)({"operation": "CREATE", "object": created, "namespace": "ns"})
    ops = json.loads(base64.b64decode(answer["patch"]))
    assert {"op": "add", "path": "/spec/template/spec/schedulingGates",
            "value": [{"name": slicing.SCHEDULING_GATE}]} in ops
    plain = job(3)
    del plain["metadata"]["annotations"]
    answer = mutator("Job", FRAMEWORKS, False)({"operation": "CREATE", "object": plain, "namespace": "ns"})
    assert "schedulingGates" not in base64.b64decode(answer.get("patch") or b"").decode()


def test_the_workload_webhook_lets_a_reserved_workloads_counts_go_down_only() -> None:
    # an elastic job's Workload may have a count go down (its slice scaled down in place); any other's
    # pod sets are fixed while it holds quota (a lowered count under a running job undercounts it)
    def wl(count: int, elastic: bool) -> v2.Workload:
        return v2.Workload.model_validate({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "annotations": ELASTIC if elastic else {}},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {"spec": {
                "containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "r", "message": "",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})

    assert workload_update(wl(2, True), wl(3, True)) == []
    assert workload_update(wl(4, True), wl(3, True)) == [("spec.podSets.0", "Invalid value: field is immutable")]
    assert workload_update(wl(2, False), wl(3, False)) == [("spec.podSets.0", "Invalid value: field is immutable")]


def test_a_slice_read_from_the_api_is_elastic_and_names_what_it_replaces() -> None:
    """The loader (the controller's translation too) reads the Workload's annotations into the engine's."""
    from pykueue.api.loader import load_documents

    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": "w2", "namespace": "ns",
                        "annotations": {**ELASTIC, slicing.REPLACEMENT_FOR: "ns/w1"}},
           "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3, "template": {"spec": {
               "containers": [{"name": "c", "image": "x"}]}}}]}}
    inputs, problems = load_documents([doc], "<test>")
    assert not problems
    (sub,) = inputs.workloads
    assert (sub.workload.elastic, sub.workload.replaces) == (True, "ns/w1")


def raycluster(workers: int, generation: int = 1) -> dict[str, Any]:
    def template(cpu: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}

    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "uid": "u2", "generation": generation,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}, "annotations": dict(ELASTIC)},
            "spec": {"enableInTreeAutoscaling": True, "headGroupSpec": {"template": template("1")},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": workers, "minReplicas": 0,
                                           "maxReplicas": 10, "template": template("1")}]}}


def test_an_autoscaling_raycluster_scales_its_worker_group_through_slices() -> None:
    """Upstream's rule over a RayCluster's pod sets (head, then each worker group): the autoscaler
    raising a group's replicas on an admitted slice makes a new slice; lowering them shrinks it."""
    from pykueue.jobs.ray import workload as ray

    built = ray.workload_from_ray(raycluster(2))
    assert RayObject(raycluster(2)).workload_name() == built["metadata"]["name"]  # found under its own name
    have = workload("s1", 0, reserved=True)
    have["spec"]["podSets"] = [{"name": "head", "count": 1}, {"name": "w", "count": 2}]
    assert [p["count"] for p in built["spec"]["podSets"]] == [1, 2]
    up = slicing.ensure(ray.workload_from_ray(raycluster(4))["spec"]["podSets"], [have])
    assert up.replaces == "ns/s1" and up.workload is None
    down = slicing.ensure(ray.workload_from_ray(raycluster(1))["spec"]["podSets"], [have])
    assert [p["count"] for p in down.updates[0]["spec"]["podSets"]] == [1, 1]
    assert RayObject(raycluster(1)).gated_pods_selector() == "ray.io/cluster=rc"


def test_the_raycluster_webhook_gates_an_elastic_clusters_workers() -> None:
    answer = mutator("RayCluster", FRAMEWORKS, False)({"operation": "CREATE", "object": raycluster(2), "namespace": "ns"})
    ops = json.loads(base64.b64decode(answer["patch"]))
    assert {"op": "add", "path": "/spec/workerGroupSpecs/0/template/spec/schedulingGates",
            "value": [{"name": slicing.SCHEDULING_GATE}]} in ops
    assert not any("headGroupSpec" in op["path"] for op in ops)  # the head runs under the first slice


def test_an_evicted_slice_stands_for_the_job_until_its_quota_is_released() -> None:
    """Upstream's rule: an evicted slice may still own running pods; it is the one the job follows (and
    is stopped for) until its reservation goes, and with it the pending scale-up no longer runs the job
    on. Then it is finished OutOfSync and the new slice stands for the job."""
    old = workload("w1", 3, reserved=True, evicted=True)
    old["status"]["conditions"].append({"type": "Admitted", "status": "True"})
    new = workload("w2", 5, reserved=False, replaces="ns/w1")
    out = slicing.ensure(pod_sets(5), [old, new])
    assert out.workload is old and not out.finish and not out.updates
    assert not slicing.pending_scale_up(new, [old, new])  # the old one is evicted: the job is stopped
    released = workload("w1", 3, reserved=False, evicted=True)
    out = slicing.ensure(pod_sets(5), [released, new])
    assert out.finish == [released] and out.workload is new


def _pod(name: str, *, gated_: bool = True, phase: str = "Pending", labels: dict[str, str] | None = None,
         created: str = "2026-01-01T00:00:00Z", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {}, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    spec = {"schedulingGates": [{"name": slicing.SCHEDULING_GATE}]} if gated_ else {}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


_JOB_POD_SET = Job({"metadata": {"name": "j", "namespace": "ns"}}).slice_pod_set


def _admitted_slice(**counts: int) -> dict[str, Any]:
    return {"status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": n, "count": c, "flavors": {"cpu": "f"}} for n, c in counts.items()]}}}


def test_the_gate_releases_at_most_the_admitted_count_beside_what_already_runs() -> None:
    """A Job admitted for 2 whose parallelism went to 5 before the slice landed: one pod already
    runs, four wait at the gate: one (the oldest) is released, three stay gated; a finished pod
    frees its place, a terminating one still holds it."""
    pods = [_pod("run", gated_=False, phase="Running"),
            *(_pod(f"g{i}", created=f"2026-01-01T00:00:0{i}Z") for i in (3, 1, 4, 2))]
    released = slicing.to_release(pods, _admitted_slice(main=2), _JOB_POD_SET)
    assert [p["metadata"]["name"] for p in released] == ["g1"]
    done = [_pod("run", gated_=False, phase="Succeeded"), *pods[1:]]
    assert [p["metadata"]["name"] for p in slicing.to_release(done, _admitted_slice(main=2), _JOB_POD_SET)] == ["g1", "g2"]
    terminating = [_pod("run", gated_=False, phase="Running", deleting=True), *pods[1:]]
    assert len(slicing.to_release(terminating, _admitted_slice(main=2), _JOB_POD_SET)) == 1
    assert slicing.to_release(pods, _admitted_slice(main=1), _JOB_POD_SET) == []


def test_a_ray_clusters_gate_releases_per_worker_group() -> None:
    """Per pod set: the group labelled Workers (pod set "workers") admitted for 2 with none running gets
    two released; a pod of a group the admission does not name stays gated."""
    group = {"ray.io/node-type": "worker", "ray.io/group": "Workers"}
    pods = [_pod("head", gated_=False, phase="Running", labels={"ray.io/node-type": "head"}),
            *(_pod(f"w{i}", labels=group, created=f"2026-01-01T00:00:0{i}Z") for i in range(3)),
            _pod("x", labels={"ray.io/node-type": "worker", "ray.io/group": "other"})]
    released = slicing.to_release(pods, _admitted_slice(head=1, workers=2), RayObject(raycluster(1)).slice_pod_set)
    assert [p["metadata"]["name"] for p in released] == ["w0", "w1"]
