"""What the engine tells its driver: the things that happened to workloads, in order."""

from __future__ import annotations

from dataclasses import dataclass

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
DEACTIVATED = "Deactivated"

# Eviction reasons (upstream's).
EVICTED_PREEMPTED = "Preempted"
EVICTED_PODS_READY_TIMEOUT = "PodsReadyTimeout"
EVICTED_CQ_STOPPED = "ClusterQueueStopped"
EVICTED_LQ_STOPPED = "LocalQueueStopped"
EVICTED_DEACTIVATED = "Deactivated"
EVICTED_ADMISSION_CHECK = "AdmissionCheck"


@dataclass(slots=True, frozen=True)
class Event:
    type: str
    workload: str  # NAMESPACE/NAME
    cluster_queue: str | None
    reason: str | None = None
    by: str | None = None
    message: str | None = None


class EngineError(Exception):
    """The engine refuses to go on (for example, a preemption loop that would never settle)."""
