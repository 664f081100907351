"""The Workload status the admission side of Kueue owns, computed from the engine's view.

Written with server-side apply on the status subresource under field manager `kueue-admission`, so a
field that is left out (an admission after eviction) is removed, while the conditions the Job side
owns (`PodsReady`, `Finished`) and the admission checks' states written by their controllers stay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from pykueue.engine import model
from pykueue.engine.workload import MISCONFIGURED, State
from pykueue.quantity import format_quantity

MANAGER = "kueue-admission"
OWNED_CONDITIONS = ("QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued")

PREEMPTION_CAUSES = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}


def rfc3339(seconds: float) -> str:
    return _rfc3339(math.floor(seconds))


@lru_cache(maxsize=64)
def _rfc3339(seconds: int) -> str:
    """Whole seconds, as Kubernetes stamps conditions; cached because a busy second writes thousands."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Eviction:
    """The last eviction of a workload, as the engine's events told it."""

    reason: str
    message: str
    preemption_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WorkloadView:
    """What the status needs from the engine about one workload."""

    state: State
    cluster_queue: str | None
    admission: model.Admission | None
    reason: str | None
    message: str
    requeue_count: int
    requeue_at: float | None
    evictions: int
    spec: model.Workload
    check_states: dict[str, str]
    accumulated_seconds: int = 0


def admission_status(admission: model.Admission, spec: model.Workload) -> dict[str, Any]:
    """`status.admission` as upstream writes it: flavors and the usage each pod set charges."""
    by_name = {ps.name: ps for ps in spec.pod_sets}
    assignments = []
    for psa in admission.pod_set_assignments:
        ps = by_name.get(psa.name)
        usage: dict[str, str] = {}
        if ps is not None:
            for resource in psa.flavors:
                if resource == model.PODS:
                    continue
                usage[resource] = format_quantity(resource, ps.requests.get(resource, 0) * psa.count)
        assignments.append({
            "name": psa.name,
            "flavors": dict(psa.flavors),
            "resourceUsage": usage,
            "count": psa.count,
        })
    return {"clusterQueue": admission.cluster_queue, "podSetAssignments": assignments}


def comparable(status: dict[str, Any]) -> dict[str, Any]:
    """A status without its timestamps, to tell whether anything but time changed."""
    out = dict(status)
    if "conditions" in out:
        out["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in out["conditions"]]
    return out


# upstream's UnadmittedWorkloadReasonWithFallback: with its UnadmittedWorkloadsObservability gate off (its
# default) a pending Workload's QuotaReserved=False reason is the older Pending (what the scheduler and a
# requeue say) or Inadmissible (what its queue says); OnHold is its own reason either way. A deactivated
# Workload's is Pending too (PendingEvaluation under the gate), Requeued=False saying Deactivated.
PENDING, INADMISSIBLE = "Pending", "Inadmissible"
FALLBACK_REASONS = {
    **dict.fromkeys(("PendingEvaluation", "WaitingForQuota", "NoMatchingFlavor", "ExceedsMaxQuota",
                     "TopologyPlacementFailed", "WaitingForPreemptedWorkloads", "WaitingForPodsReady",
                     "Deactivated"), PENDING),
    **dict.fromkeys(("Misconfigured", "Suspended"), INADMISSIBLE),
}
GRANULAR_REASONS = {"Deactivated": "PendingEvaluation"}


def api_reason(reason: str | None, granular: bool) -> str | None:
    """The reason the API shows for the engine's pending ``reason`` (which the simulator reports as is)."""
    if reason is None:
        return None
    return (GRANULAR_REASONS if granular else FALLBACK_REASONS).get(reason, reason)


def invalid_status(obj: dict[str, Any], message: str, now: float, *, granular: bool = False) -> dict[str, Any]:
    """The status of a Workload that bypassed validation: QuotaReserved=False, Misconfigured (Inadmissible
    without the gate: ``api_reason``), naming what validation says (it queues once it is valid)."""
    text = f"The workload is invalid: {message}"
    reason = api_reason(MISCONFIGURED, granular) or MISCONFIGURED
    return {"conditions": [_condition("QuotaReserved", False, reason, text, conditions_by_type(obj), rfc3339(now), None)]}


# The status fields besides conditions that this manager writes when it has them.
_OWNED_FIELDS = ("admission", "accumulatedPastExecutionTimeSeconds", "requeueState")


def shows(obj: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """The object's status already says ``wanted`` (a ``comparable`` status): the same owned
    conditions, no more and no fewer, and the same owned fields. Anything else is a difference."""
    status = obj.get("status") or {}
    if any(status.get(f) != wanted.get(f) for f in _OWNED_FIELDS):
        return False
    if "admissionChecks" in wanted and status.get("admissionChecks") != wanted["admissionChecks"]:
        return False
    shown = {c.get("type"): {k: v for k, v in c.items() if k != "lastTransitionTime"}
             for c in status.get("conditions") or () if c.get("type") in OWNED_CONDITIONS}
    return shown == {c["type"]: c for c in wanted.get("conditions") or ()}


def preempted_message(uids: tuple[str, str] | None, preemption_reason: str | None) -> str:
    """Upstream's wording of a preemption (the Evicted and Preempted conditions, the eviction event):
    the preemptor named by its UID and its Job's."""
    uid, job_uid = uids or ("UNKNOWN", "UNKNOWN")
    cause = PREEMPTION_CAUSES.get(preemption_reason or "", preemption_reason or "preemption")
    return f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {cause}"


def conditions_by_type(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if "type" in c}


def transition_time(old: dict[str, dict[str, Any]], kind: str, value: str, now: str) -> str:
    """A condition keeps its lastTransitionTime while its status stays the same."""
    previous = old.get(kind)
    return previous["lastTransitionTime"] if previous and previous.get("status") == value else now


def _condition(kind: str, status: bool, reason: str, message: str, old: dict[str, dict[str, Any]],
               now: str, generation: int | None) -> dict[str, Any]:
    value = "True" if status else "False"
    since = transition_time(old, kind, value, now)
    cond = {"type": kind, "status": value, "reason": reason, "message": message[:32768],
            "lastTransitionTime": since}
    if generation is not None:
        cond["observedGeneration"] = generation
    return cond


def desired_status(view: WorkloadView, obj: dict[str, Any], eviction: Eviction | None,
                   preemptor_uids: tuple[str, str] | None, now: float, *, granular: bool = False) -> dict[str, Any]:
    """The status fields this manager owns, for the apply body; a pending reason as ``api_reason`` says."""
    old = conditions_by_type(obj)
    stamp = rfc3339(now)
    generation = (obj.get("metadata") or {}).get("generation")
    conditions = []

    def add(kind: str, status: bool, reason: str, message: str) -> None:
        conditions.append(_condition(kind, status, reason, message, old, stamp, generation))

    stopping = view.state is State.STOPPING
    holds = view.state in (State.QUOTA_RESERVED, State.ADMITTED, State.FINISHED, State.STOPPING) \
        and view.admission is not None
    status: dict[str, Any] = {}
    if holds:
        assert view.admission is not None
        cq = view.admission.cluster_queue
        add("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}")
        if stopping:
            # Evicted, its job still stopping: the reservation stays until it has (upstream clears it
            # then); Admitted stays as it was, Evicted says why.
            shown = old.get("Admitted") or {}
            add("Admitted", shown.get("status") == "True", str(shown.get("reason") or "NoReservation"),
                str(shown.get("message") or "The workload has no reservation"))
            evicted = old.get("Evicted") or {}
            if eviction is not None:
                add("Evicted", True, eviction.reason, eviction.message)
            elif evicted.get("status") == "True":  # restored: as the API shows it
                add("Evicted", True, str(evicted.get("reason") or "Evicted"), str(evicted.get("message") or ""))
        elif view.state is State.QUOTA_RESERVED:
            add("Admitted", False, "UnsatisfiedChecks", "The workload has not all checks ready")
        else:
            add("Admitted", True, "Admitted", "The workload is admitted")
        status["admission"] = admission_status(view.admission, view.spec)
        if view.evictions and not stopping:
            add("Evicted", False, "QuotaReserved", "Previously: " + (eviction.message if eviction else "evicted"))
    else:
        # The engine's reason (upstream's granular QuotaReserved=False reasons, as api_reason shows them)
        # and message, both conditions written from the first pass.
        add("QuotaReserved", False, api_reason(view.reason, granular) or PENDING,
            view.message or "The workload has no quota reservation")
        add("Admitted", False, "NoReservation", "The workload has no reservation")
        if eviction is not None:
            add("Evicted", True, eviction.reason, eviction.message)
            requeued = view.state is State.PENDING and view.requeue_at is None
            add("Requeued", requeued, eviction.reason if not requeued else "Pending",
                eviction.message if not requeued else "The workload is requeued")
    if eviction is not None and eviction.preemption_reason is not None:
        add("Preempted", not holds or stopping, eviction.preemption_reason,
            preempted_message(preemptor_uids, eviction.preemption_reason))
    status["conditions"] = conditions
    if holds and not stopping and (checks := _check_states(view.check_states, obj, stamp)):
        status["admissionChecks"] = checks
    elif (not holds or stopping) and (reset := _reset_checks(obj, stamp)):
        status["admissionChecks"] = reset
    if view.spec.max_execution_seconds is not None and view.accumulated_seconds:
        status["accumulatedPastExecutionTimeSeconds"] = view.accumulated_seconds
    if view.requeue_count or view.requeue_at is not None:
        state: dict[str, Any] = {"count": view.requeue_count}
        if view.requeue_at is not None:
            state["requeueAt"] = rfc3339(view.requeue_at)
        status["requeueState"] = state
    return status


_RELEASED_CONDITIONS = (
    {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "The workload has no reservation",
     "lastTransitionTime": "1970-01-01T00:00:00Z"},
    {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "The workload has no reservation",
     "lastTransitionTime": "1970-01-01T00:00:00Z"})


def released_status(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """The release written before a workload reserved again elsewhere gets its new admission (an
    admission is never changed in place). It keeps the admission checks, reset to Pending as an
    eviction's release does: left out, a check entry whose controller applied only its name and state
    loses the fields this manager owned, and the server refuses the write (422)."""
    status: dict[str, Any] = {"conditions": [dict(c) for c in _RELEASED_CONDITIONS]}
    if reset := _reset_checks(obj, rfc3339(now)):
        status["admissionChecks"] = reset
    return status


def _check_states(states: dict[str, str], obj: dict[str, Any], stamp: str) -> list[dict[str, Any]]:
    """The admission checks that apply to this reservation, as their controllers last set them
    (new ones Pending); kept when unchanged so the check controllers' writes are not undone. An entry
    the ClusterQueue no longer has (its checks changed while the workload held quota) is carried as
    the API shows it: left out of the apply, an entry a check's controller co-owns loses the fields
    this manager wrote and the server refuses the write (422). Upstream drops such entries
    (syncAdmissionCheckConditions); they gate nothing here, as the engine reads the queue's checks."""
    old = {c.get("name"): c for c in (obj.get("status") or {}).get("admissionChecks") or []}
    out = [{"name": name, "state": c.get("state", "Pending"), "lastTransitionTime": c.get("lastTransitionTime", stamp),
            "message": c.get("message", "")} for name, c in old.items() if name and name not in states]
    for name in sorted(states):
        previous = old.get(name) or {}
        same = previous.get("state") == states[name]
        out.append({
            "name": name,
            "state": states[name],
            "lastTransitionTime": previous.get("lastTransitionTime", stamp) if same else stamp,
            "message": previous.get("message", "") if same else "",
        })
    return sorted(out, key=lambda c: c["name"])


def _reset_checks(obj: dict[str, Any], stamp: str) -> list[dict[str, Any]]:
    """Upstream's resetChecksOnEviction: a workload without a reservation keeps its checks, each back
    to Pending. (Dropping them from the apply would leave the server an invalid null list when
    another manager, a check's controller, co-owns the entries.)"""
    out = []
    for check in (obj.get("status") or {}).get("admissionChecks") or []:
        if not check.get("name"):
            continue
        if check.get("state") == "Pending":
            out.append({"name": check["name"], "state": "Pending",
                        "lastTransitionTime": check.get("lastTransitionTime", stamp),
                        "message": check.get("message", "")})
        else:
            out.append({"name": check["name"], "state": "Pending", "lastTransitionTime": stamp,
                        "message": f"Reset to Pending after eviction. Previously: {check.get('state')}"})
    return out


def reserves(obj: dict[str, Any], status: dict[str, Any]) -> bool:
    """``status`` carries an admission where the cached object shows none: a reservation."""
    return bool(status.get("admission")) and not (obj.get("status") or {}).get("admission")


def apply_body(obj: dict[str, Any], status: dict[str, Any], decided_on: str | None = None) -> dict[str, Any]:
    """The apply request for ``obj``'s status, naming the object it was decided for. A reservation is
    strict, as upstream's scheduler writes it from its snapshot: it carries the resourceVersion of the
    copy the engine decided on (``decided_on``; the cached one if not known), which the API server
    checks, so a decision made on a copy since changed (an elastic job's pod sets grown while the
    reservation was in flight) or on a predecessor of the same name fails (409) and is undone. The uid
    is carried too, though a status apply's metadata is not checked for it (merge patches are)."""
    meta = obj["metadata"]
    metadata = {"name": meta["name"], "namespace": meta["namespace"]}
    if meta.get("uid"):
        metadata["uid"] = meta["uid"]
    if reserves(obj, status) and (version := decided_on or meta.get("resourceVersion")):
        metadata["resourceVersion"] = version
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata, "status": status}
