"""The Job webhook hands a Job to MultiKueue (``spec.managedBy: kueue.x-k8s.io/multikueue``) when its
LocalQueue's ClusterQueue has a MultiKueue AdmissionCheck, as upstream's ApplyDefaultForManagedBy does:
only a Job with no managedBy or the Job controller's, only on create, and a JobSet is left alone here."""

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


def test_a_jobset_is_not_defaulted_by_the_jobs_hook() -> None:
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": "mk"}},
              "spec": {"suspend": True, "replicatedJobs": []}}
    assert ops(jobset, kind="JobSet") == []
