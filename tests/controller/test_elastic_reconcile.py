"""The job side of an elastic Job with a scale-up pending (an admitted slice of 3 and a new slice of 5
that replaces it, not admitted): while the Job runs it is left running under the old slice, never
suspended; once it ends, every slice it still has is finished with it."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.jobs.reconciler import JobKeys, JobReconciler, Rules
from pykueue.jobs import framework, slicing
from tests.objects import batch_job

COND = {"lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "r", "message": ""}


def elastic_job(parallelism: int, **status: Any) -> dict[str, Any]:
    job = batch_job({"kueue.x-k8s.io/queue-name": "lq"}, suspend=False)
    job["metadata"].update(namespace="ns", uid="u1", generation=3, annotations={"kueue.x-k8s.io/elastic-job": "true"})
    job["spec"].update(parallelism=parallelism, completions=20)
    job["status"] = status
    return job


def slice_(name: str, count: int, admitted: bool, replaces: str | None = None) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/elastic-job": "true", **({slicing.REPLACEMENT_FOR: replaces} if replaces else {})}
    conditions = [{"type": t, "status": "True", **COND} for t in ("QuotaReserved", "Admitted")] if admitted else []
    return {"metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": annotations,
                         "creationTimestamp": f"2026-01-01T00:00:0{count}Z",
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u1"}]},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"conditions": conditions,
                       **({"admission": {"clusterQueue": "cq", "podSetAssignments": [
                           {"name": "main", "count": count, "flavors": {"cpu": "f"}}]}} if admitted else {})}}


class Recording(JobReconciler):
    def __init__(self, job: dict[str, Any]) -> None:
        workloads = {"ns/old": slice_("old", 3, True), "ns/new": slice_("new", 5, False, replaces="ns/old")}
        super().__init__(None, JobKeys({"ns/j": job}, Rules()), workloads, {}, lambda: None,  # type: ignore[arg-type]
                         lambda: 1_800_000_000.0)
        self.done: list[framework.Action] = []

    async def execute(self, action: framework.Action) -> None:
        self.done.append(action)

    async def _ungate(self, job: Any) -> None:
        return None


def test_a_running_job_with_a_scale_up_pending_is_left_running() -> None:
    r = Recording(elastic_job(5, active=3))
    asyncio.run(r.reconcile("ns/j"))
    assert r.done == [], r.done  # no suspend, no stop: it runs on under the old slice's 3


def test_a_finished_job_finishes_every_slice_it_has() -> None:
    done = elastic_job(5, conditions=[{"type": "Complete", "status": "True", **COND}], succeeded=20)
    r = Recording(done)
    asyncio.run(r.reconcile("ns/j"))
    finished = {a.name for a in r.done if isinstance(a, framework.WorkloadConditions)
                and any(c[0] == "Finished" and c[1] for c in a.conditions)}
    assert finished == {"old", "new"}, r.done
