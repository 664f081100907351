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
