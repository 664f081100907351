"""Issue 37 item 3 for the kinds besides Pods: every reconcile compares the job with its Workload
(upstream's EquivalentToWorkload: pod sets, counts, minCount, requests, the execution limit); a
pending one whose Workload no longer matches gets its Workload deleted (a new one is made once it is
gone). Cases not covered elsewhere: a Job's minCount (``min-parallelism``) and execution limit, a
RayCluster's worker replicas, a JobSet's replicas. Expected outcomes worked out from upstream's rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pykueue.jobs.framework import Delete, GenericJob, Note, reconcile
from pykueue.jobs.job.generic import Job
from pykueue.jobs.jobset.generic import JobSetObject
from pykueue.jobs.ray.generic import RayObject

META = {"namespace": "ns", "uid": "uid-x", "labels": {"kueue.x-k8s.io/queue-name": "lq"}}
CONTAINERS = [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]


def _job() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", **copy.deepcopy(META)},
            "spec": {"suspend": True, "parallelism": 3, "completions": 3,
                     "template": {"spec": {"containers": copy.deepcopy(CONTAINERS)}}}}


def _raycluster() -> dict[str, Any]:
    template = {"spec": {"containers": copy.deepcopy(CONTAINERS)}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", **copy.deepcopy(META)},
            "spec": {"suspend": True, "headGroupSpec": {"template": copy.deepcopy(template)},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 0, "maxReplicas": 4,
                                           "template": copy.deepcopy(template)}]}}


def _jobset() -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", **copy.deepcopy(META)},
            "spec": {"suspend": True, "replicatedJobs": [{"name": "r", "replicas": 2, "template": {"spec": {
                "parallelism": 1, "completions": 1, "template": {"spec": {"containers": copy.deepcopy(CONTAINERS)}}}}}]}}


def _min_count(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/job-min-parallelism"] = "2"


def _limit(obj: dict[str, Any]) -> None:
    obj["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "600"


def _workers(obj: dict[str, Any]) -> None:
    obj["spec"]["workerGroupSpecs"][0]["replicas"] = 3


def _replicas(obj: dict[str, Any]) -> None:
    obj["spec"]["replicatedJobs"][0]["replicas"] = 3


CASES: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], GenericJob], Callable[[dict[str, Any]], None]]] = {
    "job-min-count": (_job, Job, _min_count),
    "job-execution-limit": (_job, Job, _limit),
    "raycluster-worker-replicas": (_raycluster, RayObject, _workers),
    "jobset-replicas": (_jobset, JobSetObject, _replicas),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pending_job_that_no_longer_matches_its_workload_gets_it_replaced(case: str) -> None:
    make, wrap, change = CASES[case]
    obj = make()
    workload = wrap(obj).build_workload()
    assert workload is not None
    workload["metadata"].update({"namespace": "ns", "uid": "wl-uid"})
    workload["status"] = {}
    assert not any(isinstance(a, Delete) for a in reconcile(wrap(obj), workload, {}))  # as made: it matches
    changed = copy.deepcopy(obj)
    change(changed)
    actions = reconcile(wrap(changed), workload, {})
    assert [(a.kind, a.name) for a in actions if isinstance(a, Delete)] == [("Workload", workload["metadata"]["name"])]
    assert any(isinstance(a, Note) and a.message == "workload no longer matches its job; replaced" for a in actions)
