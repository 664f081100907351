"""What the engine tells its driver: the things that happened to workloads, in order."""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.engine.model import Admission

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

# Why Kueue itself deactivated a workload (upstream's DeactivationTarget reasons): the underlying cause
# of its one eviction, whose reason is EVICTED_DEACTIVATED.
CAUSE_REQUEUING_LIMIT = "RequeuingLimitExceeded"
CAUSE_ADMISSION_CHECK = "AdmissionCheck"
CAUSE_MAX_EXECUTION_TIME = "MaximumExecutionTimeExceeded"

# Upstream's eviction messages (the Evicted condition), and how it words a preemption's reason.
PREEMPTION_REASON_TEXT = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}


@dataclass(slots=True)
class Event:
    """One thing that happened to a workload. Not frozen (a frozen dataclass sets each field through
    ``object.__setattr__``, and the engine makes one per transition); nothing changes one once made."""

    type: str
    workload: str  # NAMESPACE/NAME
    cluster_queue: str | None
    reason: str | None = None
    by: str | None = None
    message: str | None = None
    # The admission of a QuotaReserved or Admitted event; what set off a Deactivated eviction.
    admission: Admission | None = None
    underlying_cause: str | None = None


class EngineError(Exception):
    """The engine refuses to go on (for example, a preemption loop that would never settle)."""
