"""Elastic RayJobs (upstream's ElasticJobsViaWorkloadSlices for ``ray.io/rayjob``): KubeRay copies the
RayJob's annotations onto the cluster it makes, so the RayCluster webhook gates that cluster's workers;
the RayJob's worker pod sets count its live cluster's replicas (the autoscaler's writes), recorded on
the RayJob with the cluster's generation, which names each new slice. Worked by hand from upstream's
``raycluster.UpdatePodSets``, ``GetWorkloadslicingRayClusterCustomAnnotations`` and
``GetWorkloadNameExtraPart``."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from typing import Any

import pytest

from pykueue.controller.jobs.reconciler import JobKeys, JobReconciler, ObjectKeys, Rules
from pykueue.controller.webhooks import admission
from pykueue.jobs import framework, registry, slicing
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.ray import workload as ray
from pykueue.jobs.ray.generic import RayObject
from pykueue.jobs.registry import BY_KIND

from .test_ray_live import _template, rayjob

ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}


def elastic_rayjob(**status: Any) -> dict[str, Any]:
    job = rayjob(status=status or None)
    job["metadata"]["annotations"] = dict(ELASTIC)
    job["metadata"]["generation"] = 1
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    return job


def live_cluster(small: int, big: int | None, hosts: int = 1, generation: int = 2) -> dict[str, Any]:
    """The RayCluster KubeRay made for rj, after the autoscaler's writes."""
    groups = [{"groupName": "Small", "replicas": small, "template": _template("2")},
              {"groupName": "big", "numOfHosts": hosts, "template": _template("4")}]
    if big is not None:
        groups[1]["replicas"] = big
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rj-raycluster-x", "namespace": "ns", "generation": generation,
                         "annotations": dict(ELASTIC),
                         "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj",
                                              "uid": "u2", "controller": True}]},
            "spec": {"headGroupSpec": {"template": _template("1")}, "workerGroupSpecs": groups}}


def counts(job: RayObject) -> list[tuple[str, int]]:
    return [(p["name"], p["count"]) for p in job.build_workload()["spec"]["podSets"]]


def test_an_elastic_autoscaling_rayjob_counts_its_live_clusters_workers() -> None:
    """Spec: small 2, big 1 (no replicas). Live cluster: small 3; big 2 replicas on 2 hosts each = 4.
    The head and the submitter keep 1. A group without replicas keeps the spec's count."""
    cluster = live_cluster(3, 2, hosts=2)
    job = RayObject(elastic_rayjob(rayClusterName="rj-raycluster-x"), cluster)
    assert counts(job) == [("head", 1), ("small", 3), ("big", 4), ("submitter", 1)]
    assert counts(RayObject(elastic_rayjob(), live_cluster(3, None))) == [
        ("head", 1), ("small", 3), ("big", 1), ("submitter", 1)]
    # elastic without autoscaling: the RayJob's own spec (not elastic, autoscaling is refused)
    fixed = elastic_rayjob()
    fixed["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = False
    assert counts(RayObject(fixed, cluster)) == [("head", 1), ("small", 2), ("big", 1), ("submitter", 1)]


def test_a_cluster_group_the_rayjob_lacks_is_an_error() -> None:
    cluster = live_cluster(1, 1)
    cluster["spec"]["workerGroupSpecs"][1]["groupName"] = "huge"
    with pytest.raises(JobConversionError, match="RayCluster rj-raycluster-x has worker group huge which is not "
                                                 "found in Ray object rj spec"):
        RayObject(elastic_rayjob(), cluster).build_workload()


def test_it_records_its_counts_and_its_clusters_generation_which_name_the_slice() -> None:
    """Go's json.Marshal of []PodSetReplicaSize; the name's extra part is "<generation>_<cluster generation>"
    once a cluster generation is recorded, "<generation>" before."""
    job = RayObject(elastic_rayjob(), live_cluster(3, 1, generation=2))
    assert job.slicing_annotations() == {
        ray.PODSET_SIZES_ANNOTATION: '[{"name":"head","count":1},{"name":"small","count":3},'
                                     '{"name":"big","count":1},{"name":"submitter","count":1}]',
        ray.CLUSTER_GENERATION_ANNOTATION: "2"}
    assert json.loads(job.slicing_annotations()[ray.PODSET_SIZES_ANNOTATION])[1] == {"name": "small", "count": 3}
    # no cluster yet (suspended): the generation is recorded empty
    assert RayObject(elastic_rayjob()).slicing_annotations()[ray.CLUSTER_GENERATION_ANNOTATION] == ""
    before = RayObject(elastic_rayjob()).workload_name()
    assert before == workload_name_for_owner("RayJob", "ray.io", "rj", "u2", 1)
    recorded = elastic_rayjob()
    recorded["metadata"]["annotations"][ray.CLUSTER_GENERATION_ANNOTATION] = "2"
    assert RayObject(recorded).workload_name() == workload_name_for_owner("RayJob", "ray.io", "rj", "u2", "1_2")
    assert RayObject(recorded).workload_name() != before
    plain = rayjob()
    assert RayObject(plain).slicing_annotations() == {}


def test_the_raycluster_webhook_gates_the_workers_of_an_elastic_rayjobs_cluster() -> None:
    """Owned by a RayJob (not queued itself, never suspended by Kueue) yet carrying the RayJob's
    elastic-job annotation: each worker template gets the elastic-job gate; without it, nothing."""
    mutate = admission.mutator("RayCluster", ("ray.io/raycluster", "ray.io/rayjob"), False)
    review = {"uid": "r", "operation": "CREATE", "namespace": "ns", "object": live_cluster(1, 1)}
    out = mutate(review)
    patch = json.loads(base64.b64decode(out["patch"]))
    assert patch == [{"op": "add", "path": f"/spec/workerGroupSpecs/{i}/template/spec/schedulingGates",
                      "value": [{"name": slicing.SCHEDULING_GATE}]} for i in (0, 1)]
    plain = copy.deepcopy(live_cluster(1, 1))
    plain["metadata"]["annotations"] = {}
    assert "patch" not in mutate({**review, "object": plain})


def test_its_gated_pods_are_found_by_its_clusters_name_and_its_keys_find_the_cluster() -> None:
    assert RayObject(elastic_rayjob()).gated_pods_selector() is None  # no cluster yet
    job = elastic_rayjob(rayClusterName="rj-raycluster-x")
    assert RayObject(job).gated_pods_selector() == "ray.io/cluster=rj-raycluster-x"
    keys = ObjectKeys(BY_KIND["RayJob"], {"ns/rj": job}, False)
    keys.child(live_cluster(3, 1), deleted=False)
    loaded = keys.load("ns/rj")
    assert isinstance(loaded, RayObject) and loaded.cluster is keys.children["ns/rj"]["ns/rj-raycluster-x"]
    assert counts(loaded) == [("head", 1), ("small", 3), ("big", 1), ("submitter", 1)]


class Recording(JobReconciler):
    """The RayJob reconciler with its writes recorded (no API server: the decisions alone)."""

    def __init__(self, keys: ObjectKeys, workloads: dict[str, Any]) -> None:
        super().__init__(None, keys, workloads, {}, lambda: None, lambda: 1_800_000_000.0)  # type: ignore[arg-type]
        self.done: list[framework.Action] = []

    async def execute(self, action: framework.Action) -> None:
        self.done.append(action)

    async def _ungate(self, job: Any) -> None:
        return None


def admitted_slice(job: dict[str, Any], small: int) -> dict[str, Any]:
    built = RayObject(job).build_workload()
    built["metadata"].update(uid="w1", creationTimestamp="2026-01-01T00:00:01Z")
    for p in built["spec"]["podSets"]:
        if p["name"] == "small":
            p["count"] = small
    cond = {"status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "r", "message": ""}
    built["status"] = {"conditions": [{"type": t, **cond} for t in ("QuotaReserved", "Admitted")],
                       "admission": {"clusterQueue": "cq", "podSetAssignments": [
                           {"name": p["name"], "count": p["count"], "flavors": {"cpu": "f"}}
                           for p in built["spec"]["podSets"]]}}
    return built


def test_the_autoscaler_scaling_its_cluster_up_makes_a_new_slice_named_for_the_clusters_generation() -> None:
    """Running under a slice of small=2; the autoscaler writes small=3 (cluster generation 2). The
    reconciler records the counts and generation 2 on the RayJob, then creates a slice of small=3,
    named with "1_2" and replacing the admitted one; the RayJob is never suspended."""
    job = elastic_rayjob(rayClusterName="rj-raycluster-x")
    job["spec"]["suspend"] = False
    old = admitted_slice(job, 2)
    keys = ObjectKeys(BY_KIND["RayJob"], {"ns/rj": job}, False)
    keys.child(live_cluster(3, 1, generation=2), deleted=False)
    r = Recording(keys, {f"ns/{old['metadata']['name']}": old})
    asyncio.run(r.reconcile("ns/rj"))
    record, create = r.done
    assert isinstance(record, framework.Patch) and record.kind == "RayJob" and record.name == "rj"
    assert record.body["metadata"]["annotations"][ray.CLUSTER_GENERATION_ANNOTATION] == "2"
    assert isinstance(create, framework.CreateWorkload)
    assert create.manifest["metadata"]["name"] == workload_name_for_owner("RayJob", "ray.io", "rj", "u2", "1_2")
    assert create.manifest["metadata"]["annotations"][slicing.REPLACEMENT_FOR] == f"ns/{old['metadata']['name']}"
    assert [(p["name"], p["count"]) for p in create.manifest["spec"]["podSets"]] == [
        ("head", 1), ("small", 3), ("big", 1), ("submitter", 1)]
    assert job["metadata"]["annotations"] == ELASTIC  # the cached object is left as the informer has it


def test_its_submitter_job_is_held_to_the_current_slice_not_the_unsliced_name() -> None:
    """Issue 53, item 12b (upstream's kuberay e2e): the submitter Job an elastic RayJob owns runs under
    the RayJob's Workload, which is its current slice, named after the RayJob's generation and its live
    cluster's recorded one ("1_2"), not the name an inelastic RayJob's Workload would have."""
    job = elastic_rayjob(rayClusterName="rj-raycluster-x")
    job["metadata"]["annotations"][ray.CLUSTER_GENERATION_ANNOTATION] = "2"
    submitter = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "rj-submitter", "namespace": "ns", "uid": "s1", "ownerReferences": [
            {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u2", "controller": True}]},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    keys = JobKeys({"ns/rj-submitter": submitter}, Rules(frameworks=registry.enabled(("batch/job", "ray.io/rayjob"))),
                   owners=lambda kind, key: job if (kind, key) == ("RayJob", "ns/rj") else None)
    found = keys.child("ns/rj-submitter")
    assert found is not None
    assert found[1] == "ns/" + workload_name_for_owner("RayJob", "ray.io", "rj", "u2", "1_2")
