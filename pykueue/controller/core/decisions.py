"""What each engine decision becomes outside the engine: one structured log line and the Kubernetes
Event upstream records, in upstream's words (the metrics read the same events in ``metrics.py``).

The log line goes at the decision; a reservation's and an admission's Event and counters go once the
status carrying them has landed (the status writer's ``announce``), as upstream's scheduler records
them after its apply succeeded: a decision the API server refused (409) is never announced."""

from __future__ import annotations

import logging
from typing import Any

from pykueue.controller.core.events import Recorder
from pykueue.engine import events as ev
from pykueue.engine import slices

log = logging.getLogger("pykueue.controller")


def reason_of(event: ev.Event) -> str | None:
    """The reason as upstream writes it: a deactivation's eviction carries its cause
    (ReasonWithCause: ``DeactivatedDueToRequeuingLimitExceeded``)."""
    if event.type == ev.EVICTED and event.reason == ev.EVICTED_DEACTIVATED and event.underlying_cause:
        return f"{event.reason}DueTo{event.underlying_cause}"
    return event.reason


def log_line(event: ev.Event, reason: str | None) -> None:
    """One structured line per decision, whatever the decision."""
    fields: dict[str, Any] = {"decision": event.type, "workload": event.workload,
                              "clusterQueue": event.cluster_queue or "", "reason": reason or event.type}
    if event.by:
        fields["by"] = event.by
    if event.admission is not None:
        fields["flavors"] = ",".join(f"{psa.name}:{r}={f}" for psa in event.admission.pod_set_assignments
                                     for r, f in sorted(psa.flavors.items()))
    if event.message:
        fields["message"] = event.message
    log.info("decision", extra={"fields": fields})


def record(recorder: Recorder, obj: dict[str, Any] | None, event: ev.Event, reason: str | None) -> None:
    """The Kubernetes Event upstream records for this decision on the Workload ``obj``."""
    cq = event.cluster_queue
    if event.type == ev.QUOTA_RESERVED:
        recorder.emit(obj, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}")
    elif event.type == ev.ADMITTED:
        recorder.emit(obj, "Admitted", f"Admitted by ClusterQueue {cq}")
    elif event.type == ev.PREEMPTED:
        recorder.emit(obj, "Preempted", f"Preempted by {event.by} ({event.reason})")
    elif event.type == ev.EVICTED and event.reason != ev.EVICTED_PREEMPTED:
        recorder.emit(obj, f"EvictedDueTo{reason}", event.message or str(reason))
    elif event.type == ev.DEACTIVATED:
        if event.reason == ev.CAUSE_MAX_EXECUTION_TIME:
            limit = obj and (obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
            recorder.emit(obj, ev.CAUSE_MAX_EXECUTION_TIME, f"The maximum execution time ({limit}s) exceeded",
                          "Warning")
        recorder.emit(obj, "WorkloadDeactivated", event.message or "Deactivated by Kueue", "Warning")
    elif event.type == ev.REQUEUED:
        recorder.emit(obj, "Requeued", "The workload is requeued")
    elif event.type == ev.FINISHED and event.reason == slices.WORKLOAD_SLICE_REPLACED:
        recorder.emit(obj, slices.WORKLOAD_SLICE_REPLACED, event.message or "Replaced")
