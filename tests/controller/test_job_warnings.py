"""An object Kueue cannot queue gets a Warning event (upstream's ErrWorkloadCompose), once per problem:
the reconciler sees it again on every resync, and one event per message is what ``kubectl describe``
needs."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller.jobs.reconciler import JobReconciler
from pykueue.jobs import framework


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def emit(self, obj: dict[str, Any], reason: str, message: str, kind: str = "Normal") -> None:
        self.events.append((obj["metadata"]["name"], reason, message, kind))


def test_a_warning_is_recorded_once_per_object_and_message() -> None:
    recorder = Recorded()
    sync = JobReconciler(None, None, None, None, None, lambda: 0.0, recorder=recorder)  # type: ignore[arg-type]
    obj = {"kind": "RayCluster", "metadata": {"name": "rc", "namespace": "ns", "uid": "u1"}}
    bad = framework.Warn(obj, framework.ERR_WORKLOAD_COMPOSE, "spec.x: Invalid value")
    for _ in range(3):
        asyncio.run(sync.execute(bad))
    asyncio.run(sync.execute(framework.Warn(obj, framework.ERR_WORKLOAD_COMPOSE, "spec.y: Invalid value")))
    assert recorder.events == [("rc", "ErrWorkloadCompose", "spec.x: Invalid value", "Warning"),
                               ("rc", "ErrWorkloadCompose", "spec.y: Invalid value", "Warning")]


class Creates:
    """Stands for the API server's create: the first answers, the second is a conflict (already there)."""

    def __init__(self) -> None:
        self.calls = 0

    async def create(self, resource: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        from pykueue.kube.client import ApiError

        self.calls += 1
        if self.calls > 1:
            raise ApiError(409, {"reason": "AlreadyExists"}, "POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads")
        return body


def test_a_created_workload_is_recorded_on_its_job_once_the_create_has_landed() -> None:
    """Upstream's CreatedWorkload ("Created Workload: NS/NAME", Normal) on the job the Workload's
    controller owner names; a create the API server answers 409 (made already) records nothing."""
    recorder = Recorded()
    sync = JobReconciler(Creates(), None, None, None, lambda: None, lambda: 0.0, recorder=recorder)  # type: ignore[arg-type]
    sync._priority = lambda ref: (None, None)  # type: ignore[method-assign]
    manifest = {"metadata": {"name": "job-j-1", "namespace": "ns", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}]}, "spec": {}}
    asyncio.run(sync.execute(framework.CreateWorkload(manifest, "Job ns/j")))
    asyncio.run(sync.execute(framework.CreateWorkload(manifest, "Job ns/j")))
    assert recorder.events == [("j", "CreatedWorkload", "Created Workload: ns/job-j-1", "Normal")]
