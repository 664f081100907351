"""A job relabelled with a WorkloadPriorityClass that does not exist yet (issue 37: the late priority
update), as upstream takes it: UpdateWorkloadPriority fails while the class is missing, the reconcile
returns the error and the job's key comes back with backoff (controller-runtime's rate limiter; here
the work queue's, doubling to a 30 s cap: tests/kube/test_workqueue.py); nothing watches the classes,
so the class created later is read at the next retry, which writes the Workload's new priority. Nothing
is written while the class is missing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.api.priority import PriorityClasses
from pykueue.controller.jobs.reconciler import JobReconciler
from pykueue.jobs.job.generic import Job

CLASS = "kueue.x-k8s.io/priority-class"


class _Kube:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []

    async def merge_patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict:
        self.patches.append((name, patch, namespace))
        return {}


class _Integration:
    label_keys: tuple[str, ...] = ()

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job

    def load(self, key: str) -> Job:
        return Job(self.job)


def _job(klass: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "uid-j",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", CLASS: klass}},
            "spec": {"suspend": True, "parallelism": 1, "completions": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}


def _pending_workload() -> dict[str, Any]:
    """The job's Workload as it was made under class `low` (10), pending."""
    built = Job(_job("low")).build_workload()
    assert built is not None
    built["metadata"].update({"name": Job(_job("low")).workload_name(), "namespace": "ns", "uid": "wl-uid"})
    built["spec"]["priority"] = 10
    built["status"] = {}
    return built


def test_a_class_created_after_the_label_change_is_read_at_the_next_retry() -> None:
    kube, classes = _Kube(), PriorityClasses(pod={}, workload={"low": 10})
    workload = _pending_workload()
    sync = JobReconciler(kube, _Integration(_job("late")), {f"ns/{workload['metadata']['name']}": workload},  # type: ignore[arg-type]
                         {}, lambda: classes, lambda: 0.0)
    with pytest.raises(LookupError, match="WorkloadPriorityClass 'late' not found"):
        asyncio.run(sync.reconcile("ns/j"))  # the work queue requeues the key with backoff
    assert kube.patches == []
    classes.workload["late"] = 500  # created later: no event reaches the job, its retry reads it
    asyncio.run(sync.reconcile("ns/j"))
    ((name, patch, namespace),) = kube.patches
    assert (name, namespace) == (workload["metadata"]["name"], "ns")
    assert patch == {"metadata": {"uid": "wl-uid"}, "spec": {"priority": 500, "priorityClassRef": {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "late"}}}
