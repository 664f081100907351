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


@dataclass(slots=True, init=False)
class Event:
    """One thing that happened to a workload. Not frozen (a frozen dataclass sets each field through
    ``object.__setattr__``, and the engine makes one per transition); nothing changes one once made.
    Its ``__init__`` is written out: a dataclass's generated one stays interpreted in a compiled build."""

    type: str
    workload: str  # NAMESPACE/NAME
    cluster_queue: str | None
    reason: str | None
    by: str | None
    message: str | None
    # The admission of a QuotaReserved or Admitted event; what set off a Deactivated eviction.
    admission: Admission | None
    underlying_cause: str | None

    def __init__(self, type: str, workload: str, cluster_queue: str | None, reason: str | None = None,  # noqa: A002
                 by: str | None = None, message: str | None = None, admission: Admission | None = None,
                 underlying_cause: str | None = None) -> None:
        self.type, self.workload, self.cluster_queue = type, workload, cluster_queue
        self.reason, self.by, self.message = reason, by, message
        self.admission, self.underlying_cause = admission, underlying_cause


class EngineError(Exception):
    """The engine refuses to go on (for example, a preemption loop that would never settle)."""
