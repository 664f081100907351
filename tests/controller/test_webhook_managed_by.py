"""The Job webhook hands a Job to MultiKueue (``spec.managedBy: kueue.x-k8s.io/multikueue``) when its
LocalQueue's ClusterQueue has a MultiKueue AdmissionCheck, as upstream's ApplyDefaultForManagedBy does:
only a job with no managedBy or its kind's own controller's, only on create; JobSets, RayJobs and
RayClusters as Jobs."""

from __future__ import annotations

import base64
import json
from typing import Any

from pykueue.controller.webhooks import admission
from pykueue.controller.webhooks.managed_by import queue_dispatches
from tests.objects import batch_job

MK = "kueue.x-k8s.io/multikueue"
LOCAL_QUEUES = {"team/mk": {"spec": {"clusterQueue": "cq-mk"}}, "team/plain": {"spec": {"clusterQueue": "cq"}},
                "team/other": {"spec": {"clusterQueue": "cq-other"}}, "team/lost": {"spec": {"clusterQueue": "gone"}}}
CLUSTER_QUEUES = {
    "cq-mk": {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}, {"name": "mk"}]}}},
    "cq-other": {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}, {"name": "missing"}]}}},
    "cq": {"spec": {}},
}
CHECKS = {"mk": {"spec": {"controllerName": MK}}, "prov": {"spec": {"controllerName": "kueue.x-k8s.io/provisioning"}}}


def dispatches(namespace: str, queue: str) -> bool:
    return queue_dispatches(LOCAL_QUEUES, CLUSTER_QUEUES, CHECKS, namespace, queue)


def test_only_a_queue_whose_cluster_queue_has_a_multikueue_check_dispatches() -> None:
    assert dispatches("team", "mk")
    for namespace, queue in (("team", "plain"), ("team", "other"), ("team", "lost"), ("team", "nope"), ("x", "mk")):
        assert not dispatches(namespace, queue), (namespace, queue)


def ops(job: dict[str, Any], operation: str = "CREATE", kind: str = "Job") -> list[dict[str, Any]]:
    handle = admission.mutator(kind, ("batch/job", "jobset.x-k8s.io/jobset"), False, dispatches=dispatches)
    out = handle({"uid": "1", "operation": operation, "namespace": "team", "object": job})
    assert out["allowed"]
    return json.loads(base64.b64decode(out["patch"])) if "patch" in out else []


def test_a_job_queued_where_multikueue_dispatches_gets_managed_by() -> None:
    assert ops(batch_job({"kueue.x-k8s.io/queue-name": "mk"}, suspend=True)) == [
        {"op": "add", "path": "/spec/managedBy", "value": MK}]
    job = batch_job({"kueue.x-k8s.io/queue-name": "mk"})
    job["spec"]["managedBy"] = "kubernetes.io/job-controller"  # the Job controller's own value is replaced
    assert ops(job) == [{"op": "add", "path": "/spec/suspend", "value": True},
                        {"op": "replace", "path": "/spec/managedBy", "value": MK}]


def test_other_jobs_keep_their_managed_by() -> None:
    foreign = batch_job({"kueue.x-k8s.io/queue-name": "mk"}, suspend=True)
    foreign["spec"]["managedBy"] = "example.com/other"
    assert ops(foreign) == []
    assert ops(batch_job({"kueue.x-k8s.io/queue-name": "plain"}, suspend=True)) == []
    assert ops(batch_job(suspend=True)) == []  # no queue
    assert ops(batch_job({"kueue.x-k8s.io/queue-name": "mk"}, suspend=True), operation="UPDATE") == []


def _queued(kind: str, api: str, queue: str, managed: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"suspend": True}
    if managed is not None:
        spec["managedBy"] = managed
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": spec}


def test_jobsets_and_ray_objects_are_defaulted_as_jobs_with_their_own_controllers() -> None:
    kinds = (("JobSet", "jobset.x-k8s.io/v1alpha2", "jobset.sigs.k8s.io/jobset-controller"),
             ("RayJob", "ray.io/v1", "ray.io/kuberay-operator"),
             ("RayCluster", "ray.io/v1", "ray.io/kuberay-operator"))
    for kind, api, own in kinds:
        handle = admission.mutator(kind, ("batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob", "ray.io/raycluster"),
                                   False, dispatches=dispatches)

        def patch(obj: dict[str, Any], handle=handle) -> list[dict[str, Any]]:
            out = handle({"uid": "1", "operation": "CREATE", "namespace": "team", "object": obj})
            return json.loads(base64.b64decode(out["patch"])) if "patch" in out else []

        assert patch(_queued(kind, api, "mk")) == [{"op": "add", "path": "/spec/managedBy", "value": MK}], kind
        assert patch(_queued(kind, api, "mk", own)) == [{"op": "replace", "path": "/spec/managedBy", "value": MK}], kind
        assert patch(_queued(kind, api, "mk", "example.com/other")) == [], kind
        assert patch(_queued(kind, api, "plain")) == [], kind
