"""RayCluster and RayJob -> Workload, as upstream's KubeRay integrations build and validate them."""

from __future__ import annotations

import copy
import hashlib

import pytest

from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.ray.workload import (
    is_managed,
    pod_sets_for_cluster_spec,
    pod_sets_for_job,
    priority_class_path,
    template_paths,
    validate,
    workload_from_ray,
)


def _template(cpu: str, image: str = "ray:2.9") -> dict:
    return {"spec": {"containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]}}


CLUSTER_SPEC = {
    "headGroupSpec": {"rayStartParams": {}, "template": _template("2", "ray:head")},
    "workerGroupSpecs": [
        {"groupName": "Small", "replicas": 3, "minReplicas": 1, "maxReplicas": 5, "template": _template("1")},
        {"groupName": "multi", "replicas": 2, "numOfHosts": 4, "template": _template("4")},
        {"groupName": "dflt", "template": _template("1")},
    ],
}


def _cluster(**spec: object) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {**copy.deepcopy(CLUSTER_SPEC), **spec}}


def _job(**spec: object) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"shutdownAfterJobFinishes": True, "rayClusterSpec": copy.deepcopy(CLUSTER_SPEC), **spec}}


def test_cluster_pod_sets_head_then_workers_replicas_times_hosts() -> None:
    pod_sets = pod_sets_for_cluster_spec(CLUSTER_SPEC)
    # head 1; Small 3 (minReplicas/maxReplicas ignored), name lower-cased; multi 2 x 4 hosts; dflt 1
    assert [(ps["name"], ps["count"]) for ps in pod_sets] == [("head", 1), ("small", 3), ("multi", 8), ("dflt", 1)]
    assert pod_sets[0]["template"]["spec"]["containers"][0]["image"] == "ray:head"


def test_rayjob_adds_the_default_submitter_in_k8s_job_mode() -> None:
    pod_sets = pod_sets_for_job(_job())  # submissionMode omitted: KubeRay's default K8sJobMode
    assert [(ps["name"], ps["count"]) for ps in pod_sets][-1] == ("submitter", 1)
    container = pod_sets[-1]["template"]["spec"]["containers"][0]
    assert container["image"] == "ray:head"  # the head's image
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}


def test_rayjob_submitter_template_and_other_modes() -> None:
    own = pod_sets_for_job(_job(submitterPodTemplate=_template("250m")))
    assert own[-1]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
    for mode in ("HTTPMode", "InteractiveMode", "SidecarMode"):
        assert [ps["name"] for ps in pod_sets_for_job(_job(submissionMode=mode))] == ["head", "small", "multi", "dflt"]


def test_workload_is_named_and_owned_as_upstream() -> None:
    built = workload_from_ray(_cluster())
    digest = hashlib.sha1(b"RayCluster\nray.io\nrc\nrc").hexdigest()[:5]
    assert built["metadata"]["name"] == f"raycluster-rc-{digest}"
    assert built["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
    assert built["spec"]["queueName"] == "q"
    assert workload_from_ray(_job())["metadata"]["name"].startswith("rayjob-rj-")


def test_priority_from_label_else_first_pod_set_with_a_class() -> None:
    job = _job()
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][1]["template"]["spec"]["priorityClassName"] = "high"
    assert workload_from_ray(job)["spec"]["priorityClassRef"]["name"] == "high"
    assert priority_class_path(job) == "spec.rayClusterSpec.workerGroupSpecs[1].template.spec.priorityClassName"
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "gold"
    assert workload_from_ray(job)["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "gold"}
    assert priority_class_path(job) is None


def test_template_paths_follow_pod_set_order() -> None:
    assert template_paths(_job()) == [
        "spec.rayClusterSpec.headGroupSpec.template",
        "spec.rayClusterSpec.workerGroupSpecs[0].template",
        "spec.rayClusterSpec.workerGroupSpecs[1].template",
        "spec.rayClusterSpec.workerGroupSpecs[2].template",
        "spec.submitterPodTemplate",
    ]


def test_cluster_validation_as_the_webhook() -> None:
    bad = _cluster(enableInTreeAutoscaling=True)
    bad["spec"]["workerGroupSpecs"][0]["groupName"] = "head"
    bad["spec"]["workerGroupSpecs"] += [{"groupName": f"g{i}", "template": _template("1")} for i in range(5)]
    assert [(e.path, e.message) for e in validate(bad)] == [
        ("spec.enableInTreeAutoscaling",
         "Invalid value: true: a kueue managed job can use autoscaling only when the ElasticJobsViaWorkloadSlices "
         "feature gate is on and the job is an elastic job"),
        ("spec.workerGroupSpecs", "Too many: 8: must have at most 7 items"),
        ("spec.workerGroupSpecs[0].groupName", 'Forbidden: "head" is reserved for the head group'),
    ]
    with pytest.raises(JobConversionError):
        workload_from_ray(bad)


def test_rayjob_validation_as_the_webhook() -> None:
    assert [e.path for e in validate(_job(shutdownAfterJobFinishes=False))] == ["spec.shutdownAfterJobFinishes"]
    both = _job(clusterSelector={"ray.io/cluster": "shared"})
    assert [e.message for e in validate(both)] == [
        "Invalid value: a kueue managed job should not use an existing cluster"]
    neither = _job()
    del neither["spec"]["rayClusterSpec"]
    assert [e.path for e in validate(neither)] == ["spec.rayClusterSpec"]
    only_selector = {**neither, "spec": {"clusterSelector": {"ray.io/cluster": "shared"}}}
    assert not is_managed(only_selector) and is_managed(_job())


def test_missing_fields_have_the_objects_paths() -> None:
    bad = _cluster()
    bad["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    bad["spec"]["workerGroupSpecs"][1] = {"replicas": -1, "numOfHosts": 0}
    assert [(e.path, e.message) for e in validate(bad)] == [
        ("spec.headGroupSpec.template.spec.containers", "Required value"),
        ("spec.workerGroupSpecs[1].groupName", "Required value"),
        ("spec.workerGroupSpecs[1].template", "Required value"),
        ("spec.workerGroupSpecs[1].replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.workerGroupSpecs[1].numOfHosts", "Invalid value: 0: must be greater than or equal to 1"),
    ]


def _containers(pod_set: dict) -> list[tuple[str, dict]]:
    return [(c["name"], c["resources"].get("requests", {})) for c in pod_set["template"]["spec"]["containers"]]


def test_sidecar_mode_puts_the_default_submitter_in_the_head() -> None:
    pod_sets = pod_sets_for_job(_job(submissionMode="SidecarMode", submitterPodTemplate=_template("3")))
    assert [ps["name"] for ps in pod_sets] == ["head", "small", "multi", "dflt"]
    # KubeRay ignores submitterPodTemplate in this mode: the default submitter's requests
    assert _containers(pod_sets[0]) == [("c", {"cpu": "2"}), ("ray-job-submitter", {"cpu": "500m", "memory": "200Mi"})]


def test_gcs_fault_tolerance_reserves_the_redis_cleanup_in_the_head() -> None:
    # a 2-cpu head keeps its cpu and gains the cleanup's 256Mi; a limit stands in for a request
    ft = _cluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    assert _containers(pod_sets_for_cluster_spec(ft["spec"], {})[0])[0] == ("c", {"cpu": "2", "memory": "256Mi"})
    small_head = copy.deepcopy(CLUSTER_SPEC)
    small_head["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}}
    assert _containers(pod_sets_for_cluster_spec(small_head, {"ray.io/ft-enabled": "true"})[0])[0] == (
        "c", {"memory": "1Gi", "cpu": "200m"})
    assert _containers(pod_sets_for_cluster_spec(small_head, {"ray.io/ft-enabled": "false"})[0])[0] == (
        "c", {"cpu": "100m"})
    job = _job()
    job["metadata"]["annotations"] = {"ray.io/ft-enabled": "TRUE"}  # the RayJob's annotation counts
    assert _containers(pod_sets_for_job(job)[0]) == [("c", {"cpu": "2", "memory": "256Mi"})]
