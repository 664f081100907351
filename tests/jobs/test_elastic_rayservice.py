"""An elastic RayService follows its live cluster as an elastic RayJob does: upstream's RayService
``PodSets`` builds the pod sets from ``spec.rayClusterConfig`` and then calls ``raycluster.UpdatePodSets``
with ``status.activeServiceStatus.rayClusterName`` (so an elastic one with in-tree autoscaling counts the
active cluster's worker replicas), its ``GetCustomAnnotations`` records the counts and that cluster's
generation, and its ``GetWorkloadNameExtraPart`` names each slice with both generations. Unlike an
elastic RayJob's, its cluster's workers are not gated (see the test). Each expectation is worked by hand."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.jobs.reconciler import ObjectKeys
from pykueue.controller.webhooks import admission
from pykueue.jobs import framework, slicing
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.ray import workload as ray
from pykueue.jobs.ray.generic import RayObject
from pykueue.jobs.registry import BY_KIND

from .test_elastic_rayjob import ELASTIC, Recording, admitted_slice
from .test_ray_live import _template
from .test_rayservice import rayservice


def elastic_rayservice(cluster: str | None = None) -> dict[str, Any]:
    status = {"activeServiceStatus": {"rayClusterName": cluster}} if cluster else None
    service = rayservice(suspend=True, status=status, annotations=dict(ELASTIC), generation=1)
    service["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    return service


def live_cluster(small: int, big: int | None, generation: int = 2) -> dict[str, Any]:
    """The RayCluster KubeRay made for rs (its active cluster), after the autoscaler's writes."""
    groups = [{"groupName": "Small", "replicas": small, "template": _template("2")},
              {"groupName": "big", "template": _template("4")}]
    if big is not None:
        groups[1]["replicas"] = big
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rs-raycluster-x", "namespace": "ns", "generation": generation,
                         "annotations": dict(ELASTIC),
                         "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayService", "name": "rs",
                                              "uid": "u3", "controller": True}]},
            "spec": {"headGroupSpec": {"template": _template("1")}, "workerGroupSpecs": groups}}


def counts(job: RayObject) -> list[tuple[str, int]]:
    return [(p["name"], p["count"]) for p in job.build_workload()["spec"]["podSets"]]


def test_an_elastic_autoscaling_rayservice_counts_its_active_clusters_workers() -> None:
    """Spec: head 1, small 2, big 1 (no replicas). Active cluster: small 5, big 3. A group without
    replicas keeps the spec's count. Elastic without autoscaling, or neither (autoscaling without
    elastic is refused by the webhook): the spec's counts."""
    assert counts(RayObject(elastic_rayservice("rs-raycluster-x"), live_cluster(5, 3))) == [
        ("head", 1), ("small", 5), ("big", 3)]
    assert counts(RayObject(elastic_rayservice("rs-raycluster-x"), live_cluster(5, None))) == [
        ("head", 1), ("small", 5), ("big", 1)]
    fixed = elastic_rayservice("rs-raycluster-x")
    fixed["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = False
    assert counts(RayObject(fixed, live_cluster(5, 3))) == [("head", 1), ("small", 2), ("big", 1)]
    plain = rayservice(status={"activeServiceStatus": {"rayClusterName": "rs-raycluster-x"}})
    assert counts(RayObject(plain, live_cluster(5, 3))) == [("head", 1), ("small", 2), ("big", 1)]


def test_it_is_a_sliced_workload_named_with_its_clusters_recorded_generation() -> None:
    """An elastic RayService's Workload is a slice (elastic-job annotation, name with the generation):
    "1" before a cluster generation is recorded, "1_4" after; it records its counts and the active
    cluster's generation ("" while it has none)."""
    job = RayObject(elastic_rayservice("rs-raycluster-x"), live_cluster(3, 1, generation=4))
    assert job.slicing_annotations() == {
        ray.PODSET_SIZES_ANNOTATION: '[{"name":"head","count":1},{"name":"small","count":3},{"name":"big","count":1}]',
        ray.CLUSTER_GENERATION_ANNOTATION: "4"}
    assert RayObject(elastic_rayservice()).slicing_annotations()[ray.CLUSTER_GENERATION_ANNOTATION] == ""
    built = RayObject(elastic_rayservice()).build_workload()
    assert built["metadata"]["name"] == workload_name_for_owner("RayService", "ray.io", "rs", "u3", 1)
    assert built["metadata"]["annotations"][slicing.ELASTIC_JOB_ANNOTATION] == "true"
    recorded = elastic_rayservice()
    recorded["metadata"]["annotations"][ray.CLUSTER_GENERATION_ANNOTATION] = "4"
    assert RayObject(recorded).workload_name() == workload_name_for_owner(
        "RayService", "ray.io", "rs", "u3", "1_4")
    assert RayObject(rayservice()).slicing_annotations() == {}


def test_its_clusters_workers_are_not_gated_and_are_found_by_the_active_clusters_name() -> None:
    """A RayService's cluster is first KubeRay's pending cluster and becomes active only once it serves,
    which may need its workers: they are not gated (an elastic RayJob's cluster's are), so a cluster
    never waits on a slice it cannot be counted by. Gated pods would be found by the active cluster."""
    mutate = admission.mutator("RayCluster", ("ray.io/raycluster", "ray.io/rayservice"), False)
    review = {"uid": "r", "operation": "CREATE", "namespace": "ns", "object": live_cluster(1, 1)}
    assert "patch" not in mutate(review)
    assert RayObject(elastic_rayservice()).gated_pods_selector() is None
    assert RayObject(elastic_rayservice("rs-raycluster-x")).gated_pods_selector() == "ray.io/cluster=rs-raycluster-x"
    keys = ObjectKeys(BY_KIND["RayService"], {"ns/rs": elastic_rayservice("rs-raycluster-x")}, False)
    keys.child(live_cluster(3, 1), deleted=False)
    loaded = keys.load("ns/rs")
    assert isinstance(loaded, RayObject) and loaded.cluster is keys.children["ns/rs"]["ns/rs-raycluster-x"]


def test_the_autoscaler_scaling_its_cluster_up_makes_a_new_slice_and_never_suspends_it() -> None:
    """Serving under a slice of small=2; the autoscaler writes small=4 (cluster generation 3). The
    reconciler records generation 3 on the RayService, then creates a slice of small=4 named "1_3"
    that replaces the admitted one; the RayService is not suspended."""
    service = elastic_rayservice("rs-raycluster-x")
    service["spec"]["rayClusterConfig"]["suspend"] = False
    old = admitted_slice(service, 2)
    keys = ObjectKeys(BY_KIND["RayService"], {"ns/rs": service}, False)
    keys.child(live_cluster(4, 1, generation=3), deleted=False)
    r = Recording(keys, {f"ns/{old['metadata']['name']}": old})
    asyncio.run(r.reconcile("ns/rs"))
    record, create = r.done
    assert isinstance(record, framework.Patch) and record.kind == "RayService" and record.name == "rs"
    assert record.body["metadata"]["annotations"][ray.CLUSTER_GENERATION_ANNOTATION] == "3"
    assert isinstance(create, framework.CreateWorkload)
    assert create.manifest["metadata"]["name"] == workload_name_for_owner(
        "RayService", "ray.io", "rs", "u3", "1_3")
    assert create.manifest["metadata"]["annotations"][slicing.REPLACEMENT_FOR] == f"ns/{old['metadata']['name']}"
    assert [(p["name"], p["count"]) for p in create.manifest["spec"]["podSets"]] == [
        ("head", 1), ("small", 4), ("big", 1)]
