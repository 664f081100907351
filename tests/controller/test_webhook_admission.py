"""Admission decisions without a cluster: which Jobs the defaulting webhook suspends, the namespace's
default LocalQueue, and a refusal worded as `pykueue validate` words it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from pykueue.controller.webhooks import admission
from pykueue.jobs.registry import FRAMEWORKS
from tests.objects import batch_job
from tests.validate_cli import validate_lines


def mutate_job(request: dict[str, Any], manage_all: bool, default_queue_exists=admission.no_default_queue
               ) -> dict[str, Any]:
    """The Job webhook's answer, every integration on."""
    return admission.mutator("Job", FRAMEWORKS, manage_all, default_queue_exists)(request)


def test_job_default_suspends_exactly_the_managed_jobs() -> None:
    queued = batch_job({"kueue.x-k8s.io/queue-name": "q"})
    patch = mutate_job({"uid": "1", "operation": "CREATE", "object": queued}, False)
    assert patch["allowed"] and patch["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(patch["patch"])) == [
        {"op": "add", "path": "/spec/suspend", "value": True}]
    for job, manage_all in ((batch_job(), False), (batch_job({"kueue.x-k8s.io/queue-name": "q"}, suspend=True), False)):
        assert mutate_job({"uid": "2", "operation": "CREATE", "object": job}, manage_all) == {
            "uid": "2", "allowed": True}
    assert "patch" in mutate_job({"uid": "3", "operation": "CREATE", "object": batch_job()}, True)


def test_a_job_without_queue_goes_to_its_namespaces_default_local_queue() -> None:
    """Upstream's LocalQueueDefaulting: where a LocalQueue named `default` exists, a Job without a
    queue label gets `default` and is suspended; not in another namespace, not a RayJob's child."""
    def patch_of(job: dict[str, Any], namespace: str = "team") -> list[dict[str, Any]]:
        out = mutate_job({"uid": "1", "operation": "CREATE", "namespace": namespace, "object": job}, False,
                                   lambda ns: ns == "team")
        return json.loads(base64.b64decode(out["patch"])) if "patch" in out else []
    assert patch_of(batch_job()) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
        {"op": "add", "path": "/spec/suspend", "value": True}]
    unlabelled = batch_job()
    del unlabelled["metadata"]["labels"]
    assert patch_of(unlabelled)[0] == {"op": "add", "path": "/metadata/labels",
                                       "value": {"kueue.x-k8s.io/queue-name": "default"}}
    assert patch_of(batch_job(), "elsewhere") == []
    assert patch_of(batch_job({"kueue.x-k8s.io/queue-name": "mine"}))[0]["path"] == "/spec/suspend"  # its own queue
    child = batch_job()
    child["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "r", "uid": "u",
                                             "controller": True}]
    assert patch_of(child) == []


def test_refusal_lists_validates_problems_as_upstreams_aggregate(tmp_path: Path) -> None:
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "two-problems"},
          "spec": {"resourceGroups": [
              {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]},
              {"coveredResources": ["memory"], "flavors": [{"name": "f", "resources": [{"name": "memory", "nominalQuota": "1"}]}]},
          ]}}
    lines = validate_lines(tmp_path, cq)
    assert len(lines) == 2
    got = admission.validate({"uid": "1", "operation": "CREATE", "object": cq})
    assert got["allowed"] is False and got["status"]["code"] == 403
    assert got["status"]["message"] == "[" + ", ".join(lines) + "]"
    assert admission.aggregate(["a", "a"]) == "a"


def _reserved_workload(template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": template}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "r", "message": "",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def test_a_go_clients_round_trip_of_a_reserved_workload_is_no_change() -> None:
    """Upstream's ValidateWorkloadUpdate compares decoded structs (apimachinery's Semantic): a Go client's
    Get-then-Update of a Workload holding quota sends `metadata: {creationTimestamp: null}`, empty
    `resources` of an init container and canonical quantities ("1" for "1000m") where the stored
    object had none: allowed. A changed image or request is still refused (issue 53, item 1)."""
    stored = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1000m"}}}],
                       "initContainers": [{"name": "i", "image": "x"}]}}
    sent = {"metadata": {"creationTimestamp": None, "labels": {}},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}, "ports": []}],
                     "initContainers": [{"name": "i", "image": "x", "resources": {}}]}}

    def update(template: dict[str, Any]) -> dict[str, Any]:
        return admission.validate({"uid": "1", "operation": "UPDATE", "object": _reserved_workload(template),
                                   "oldObject": _reserved_workload(stored)})
    assert update(sent)["allowed"]
    for changed in ({**sent["spec"], "containers": [{"name": "c", "image": "y", "resources": {"requests": {"cpu": "1"}}}]},
                    {**sent["spec"], "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}):
        out = update({"spec": changed})
        assert not out["allowed"] and out["status"]["message"] == "spec.podSets.0: Invalid value: field is immutable"
