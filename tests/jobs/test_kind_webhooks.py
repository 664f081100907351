"""The validating webhooks of the Pod, Deployment, StatefulSet, RayCluster and RayJob integrations:
each rule of upstream's ValidateCreate/ValidateUpdate (and jobframework's shared rules), with the
message upstream's ``field.ErrorList`` prints, and the handler that answers the API server."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.controller.webhooks import admission
from pykueue.jobs.deployment import webhook as deployment_webhook
from pykueue.jobs.framework.validation import DNS1123_SUBDOMAIN_MESSAGE
from pykueue.jobs.pod import serving
from pykueue.jobs.pod import webhook as pod_update
from pykueue.jobs.ray import webhook as ray_update
from pykueue.jobs.statefulset import webhook as statefulset_webhook

QUEUE = "kueue.x-k8s.io/queue-name"
CLASS = "kueue.x-k8s.io/priority-class"
GROUP = "kueue.x-k8s.io/pod-group-name"
COUNT = "kueue.x-k8s.io/pod-group-total-count"
BAD_NAME = DNS1123_SUBDOMAIN_MESSAGE  # apimachinery's IsDNS1123Subdomain, as framework/validation.py has it


def no_default(_ns: str) -> bool:
    return False


def pod(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        gated: bool = True) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"kueue.x-k8s.io/managed": "true", **(labels or {})},
                         "annotations": dict(annotations or {})},
            "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}] if gated else [],
                     "containers": [{"name": "c"}]}}


def msgs(errors) -> list[str]:
    return [str(e) for e in errors]


# ---- Pods ------------------------------------------------------------------------------------------


def test_a_group_name_needs_its_total_count_and_the_count_its_name() -> None:
    both = (f"both the '{COUNT}' annotation and the '{GROUP}' label should be set")
    assert msgs(pod_update.validate_pod(pod({QUEUE: "lq", GROUP: "g"}))) == [
        f"metadata.annotations[{COUNT}]: Required value: {both}"]
    assert msgs(pod_update.validate_pod(pod({QUEUE: "lq"}, {COUNT: "2"}))) == [
        f"metadata.labels[{GROUP}]: Required value: {both}"]
    assert msgs(pod_update.validate_pod(pod({QUEUE: "lq", GROUP: "g"}, {COUNT: "2"}))) == []


def test_the_total_count_is_a_positive_integer_and_the_group_name_a_resource_name() -> None:
    assert msgs(pod_update.validate_pod(pod({GROUP: "g"}, {COUNT: "abc"}))) == [
        f'metadata.annotations[{COUNT}]: Invalid value: "abc": strconv.Atoi: parsing "abc": invalid syntax']
    assert msgs(pod_update.validate_pod(pod({GROUP: "g"}, {COUNT: "0"}))) == [
        f"metadata.annotations[{COUNT}]: Invalid value: \"0\": incorrect annotation value '{COUNT}=0': group total "
        "count should be greater than zero"]
    assert msgs(pod_update.validate_pod(pod({GROUP: "G_1"}, {COUNT: "1"}))) == [
        f'metadata.labels[{GROUP}]: Invalid value: "G_1": {BAD_NAME}']


def test_the_managed_label_says_true_and_a_queue_label_is_a_resource_name() -> None:
    assert msgs(pod_update.validate_pod(pod({"kueue.x-k8s.io/managed": "yes"}))) == [
        "metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can only be 'true'"]
    assert msgs(pod_update.validate_pod(pod({QUEUE: "Bad_Q"}))) == [
        f'metadata.labels[{QUEUE}]: Invalid value: "Bad_Q": {BAD_NAME}']


def test_a_groups_prebuilt_workload_is_the_group() -> None:
    assert msgs(pod_update.validate_pod(pod({GROUP: "g", "kueue.x-k8s.io/prebuilt-workload-name": "other"},
                                            {COUNT: "1"}))) == [
        'metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "other": prebuilt workload and '
        "pod group should be equal"]


def test_a_released_pod_keeps_its_queue_a_gated_one_may_move() -> None:
    running = pod({QUEUE: "lq"}, gated=False)
    moved = copy.deepcopy(running)
    moved["metadata"]["labels"][QUEUE] = "other"
    assert msgs(pod_update.validate_pod_update(running, moved, no_default)) == [
        f'metadata.labels[{QUEUE}]: Invalid value: "other": field is immutable']
    gated = pod({QUEUE: "lq"})
    moved = copy.deepcopy(gated)
    moved["metadata"]["labels"][QUEUE] = "other"
    assert msgs(pod_update.validate_pod_update(gated, moved, no_default)) == []


def test_a_pod_keeps_its_group_and_an_unretriable_group_stays_so() -> None:
    old = pod({GROUP: "g"}, {COUNT: "2", "kueue.x-k8s.io/retriable-in-group": "false"})
    new = copy.deepcopy(old)
    new["metadata"]["labels"][GROUP] = "h"
    new["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"] = "true"
    assert msgs(pod_update.validate_pod_update(old, new, no_default)) == [
        "metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: unretriable pod group can't be "
        "converted to retriable",
        f'metadata.labels[{GROUP}]: Invalid value: "h": field is immutable']


def test_a_priority_class_is_never_removed_nor_added_to_a_running_pod() -> None:
    old = pod({CLASS: "low"}, gated=False)
    new = copy.deepcopy(old)
    del new["metadata"]["labels"][CLASS]
    assert msgs(pod_update.validate_pod_update(old, new, no_default)) == [
        f'metadata.labels[{CLASS}]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload']
    assert msgs(pod_update.validate_pod_update(new, old, no_default)) == [
        f'metadata.labels[{CLASS}]: Invalid value: "low": WorkloadPriorityClass cannot be added to a non-suspended '
        "workload"]


def test_the_elastic_job_annotation_never_changes() -> None:
    old = pod()
    new = pod(annotations={"kueue.x-k8s.io/elastic-job": "true"})
    assert msgs(pod_update.validate_pod_update(old, new, no_default)) == [
        "metadata.labels[kueue.x-k8s.io/elastic-job]: Invalid value: true: field is immutable"]


# ---- Deployments and StatefulSets -----------------------------------------------------------------------


def workload_set(kind: str, queue: str | None = "lq", replicas: int = 2, ready: int = 0,
                 status_replicas: int = 0) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "s", "namespace": "ns", "labels": {QUEUE: queue} if queue else {}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c"}]}}},
            "status": {"readyReplicas": ready, "replicas": status_replicas}}


def relabel(obj: dict[str, Any], queue: str | None = None, replicas: int | None = None) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["labels"].pop(QUEUE, None)
    if queue:
        new["metadata"]["labels"][QUEUE] = queue
    if replicas is not None:
        new["spec"]["replicas"] = replicas
    return new


def test_a_serving_workloads_queue_changes_only_before_a_replica_is_ready_and_is_never_dropped() -> None:
    for kind, check in (("Deployment", deployment_webhook.validate_deployment_update),
                        ("StatefulSet", statefulset_webhook.validate_statefulset_update)):
        pending, running = workload_set(kind), workload_set(kind, ready=1)
        assert msgs(check(pending, relabel(pending, "other"))) == [], kind
        # upstream passes the old value first: the refusal names the queue it had
        assert msgs(check(running, relabel(running, "other"))) == [
            f'metadata.labels[{QUEUE}]: Invalid value: "lq": field is immutable'], kind
        assert msgs(check(pending, relabel(pending, None))) == [
            f'metadata.labels[{QUEUE}]: Invalid value: "lq": field is immutable'], kind
        assert msgs(check(pending, relabel(pending, "Bad"))) == [
            f'metadata.labels[{QUEUE}]: Invalid value: "Bad": {BAD_NAME}'], kind


def test_a_serving_workloads_create_checks_the_queue_label() -> None:
    assert msgs(serving.validate_create(workload_set("Deployment", queue="Bad"))) == [
        f'metadata.labels[{QUEUE}]: Invalid value: "Bad": {BAD_NAME}']
    assert msgs(serving.validate_create(workload_set("Deployment"))) == []


def test_a_queued_statefulset_scales_only_to_or_from_zero() -> None:
    """As upstream's webhook tests: a queued StatefulSet's replicas are fixed except to or from 0,
    whether or not a replica is ready yet; one without a queue label scales freely."""
    for ready in (0, 2):
        queued = workload_set("StatefulSet", ready=ready)
        assert msgs(statefulset_webhook.validate_statefulset_update(queued, relabel(queued, "lq", replicas=3))) == [
            "spec.replicas: Invalid value: 3: field is immutable"], ready
        assert msgs(statefulset_webhook.validate_statefulset_update(queued, relabel(queued, "lq", replicas=0))) == []
    stopped = workload_set("StatefulSet", replicas=0)
    assert msgs(statefulset_webhook.validate_statefulset_update(stopped, relabel(stopped, "lq", replicas=3))) == []
    stopping = workload_set("StatefulSet", replicas=0, status_replicas=1)
    assert msgs(statefulset_webhook.validate_statefulset_update(stopping, relabel(stopping, "lq", replicas=2))) == [
        "spec.replicas: Forbidden: scaling down is still in progress"]
    unqueued = workload_set("StatefulSet", queue=None, ready=2)
    assert msgs(statefulset_webhook.validate_statefulset_update(unqueued, relabel(unqueued, None, replicas=5))) == []


# ---- Ray --------------------------------------------------------------------------------------------


def cluster_spec(**extra: Any) -> dict[str, Any]:
    return {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 1,
                                  "template": {"spec": {"containers": [{"name": "w"}]}}}], **extra}


def ray_job(queue: str | None = "lq", suspend: bool = True, **spec: Any) -> dict[str, Any]:
    body = {"shutdownAfterJobFinishes": True, "rayClusterSpec": cluster_spec(), "suspend": suspend, **spec}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": "ns", "labels": {QUEUE: queue} if queue else {}}, "spec": body}


def ray_cluster(queue: str | None = "lq", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "labels": {QUEUE: queue} if queue else {}},
            "spec": {**cluster_spec(), **spec}}


def test_a_rayjob_brings_its_cluster_or_selects_one_never_both_nor_neither() -> None:
    both = ray_job(clusterSelector={"ray.io/cluster": "x"})
    assert msgs(ray_update.validate_create(both, False)) == [
        "spec.clusterSelector: Invalid value: map[ray.io/cluster:x]: a kueue managed job should not use an "
        "existing cluster"]
    selector = ray_job(clusterSelector={"ray.io/cluster": "x"})
    del selector["spec"]["rayClusterSpec"]
    assert msgs(ray_update.validate_create(selector, False)) == []
    neither = ray_job()
    del neither["spec"]["rayClusterSpec"]
    assert msgs(ray_update.validate_create(neither, False)) == [
        "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use "
        "clusterSelector"]


def test_a_rayjob_deletes_its_cluster_and_does_not_autoscale_unless_elastic() -> None:
    job = ray_job(shutdownAfterJobFinishes=False, rayClusterSpec=cluster_spec(enableInTreeAutoscaling=True))
    assert msgs(ray_update.validate_create(job, False)) == [
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after "
        "finishing",
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job can use autoscaling "
        "only when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job"]
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    job["spec"]["shutdownAfterJobFinishes"] = True
    assert msgs(ray_update.validate_create(job, False)) == []


def test_an_unqueued_ray_object_is_not_checked_unless_every_job_is_managed() -> None:
    job = ray_job(queue=None, shutdownAfterJobFinishes=False)
    assert msgs(ray_update.validate_create(job, False)) == []
    assert msgs(ray_update.validate_create(job, True)) == [
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after "
        "finishing"]


def test_a_rayclusters_workers_are_at_most_seven_and_none_is_the_head() -> None:
    groups = [{"groupName": "head" if i == 0 else f"g{i}", "template": {}} for i in range(8)]
    assert msgs(ray_update.validate_create(ray_cluster(workerGroupSpecs=groups), False)) == [
        "spec.workerGroupSpecs: Too many: 8: must have at most 7 items",
        'spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group']


def test_a_running_ray_object_keeps_its_queue() -> None:
    for old in (ray_job(suspend=False), ray_cluster(suspend=False)):
        new = copy.deepcopy(old)
        new["metadata"]["labels"][QUEUE] = "other"
        assert msgs(ray_update.validate_update(old, new, False, no_default)) == [
            f'metadata.labels[{QUEUE}]: Invalid value: "other": field is immutable'], old["kind"]
        old["spec"]["suspend"] = new["spec"]["suspend"] = True
        assert msgs(ray_update.validate_update(old, new, False, no_default)) == [], old["kind"]


# ---- the handlers ------------------------------------------------------------------------------------


def review(obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"uid": "u", "operation": "UPDATE" if old else "CREATE", "object": obj, "oldObject": old,
            "namespace": "ns"}


def test_each_kinds_handler_refuses_with_upstreams_aggregate_and_allows_when_its_integration_is_off() -> None:
    frameworks = ("pod", "deployment", "statefulset", "ray.io/raycluster", "ray.io/rayjob")
    bad = {"Pod": pod({QUEUE: "lq", GROUP: "g"}), "Deployment": workload_set("Deployment", queue="Bad"),
           "StatefulSet": workload_set("StatefulSet", queue="Bad"),
           "RayCluster": ray_cluster(enableInTreeAutoscaling=True),
           "RayJob": ray_job(shutdownAfterJobFinishes=False)}
    for kind, obj in bad.items():
        answer = admission.validator_for_jobs(kind, frameworks)(review(obj))
        assert answer["allowed"] is False and answer["status"]["code"] == 403, kind
        assert admission.validator_for_jobs(kind, ("batch/job",))(review(obj))["allowed"] is True, kind
    running = workload_set("StatefulSet", ready=2)
    answer = admission.validator_for_jobs("StatefulSet", frameworks)(review(relabel(running, "x", 3), running))
    assert answer["status"]["message"] == ('[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "lq": field '
                                           'is immutable, spec.replicas: Invalid value: 3: field is immutable]')
    going = {**bad["Pod"], "metadata": {**bad["Pod"]["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert admission.validator_for_jobs("Pod", frameworks)(review(going))["allowed"] is True


def test_a_deployments_priority_class_reaches_its_pods_template() -> None:
    """Upstream's Deployment ``Default`` copies the WorkloadPriorityClass label to the pod template, so
    each Pod's Workload has the Deployment's priority (as ``deployment.pods`` builds them for simulate)."""

    deployment = {"metadata": {"name": "web", "namespace": "ns", "labels": {QUEUE: "lq", CLASS: "high"}},
                  "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}}
    assert {"op": "add", "path": "/spec/template/metadata/labels/kueue.x-k8s.io~1priority-class",
            "value": "high"} in deployment_webhook.deployment_defaults(deployment, False)


def test_validate_and_simulate_refuse_a_group_members_count_with_the_webhooks_words() -> None:
    """``pykueue validate`` (``api.pod_group.member_errors``) and the Pod webhook share the rule."""
    from pykueue.api import pod_group

    for value in ("abc", "0"):
        (error,) = pod_update.validate_pod(pod({GROUP: "g"}, {COUNT: value}))
        assert pod_group.member_errors({COUNT: value}) == [(error.path, error.message)], value
    (error,) = pod_update.validate_pod(pod({GROUP: "g"}))
    assert pod_group.member_errors({}) == [(error.path, error.message)]
    assert pod_group.member_errors({COUNT: "2"}) == []
