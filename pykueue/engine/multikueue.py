"""MultiKueue's decisions, with no I/O: which worker clusters a workload is offered to, which worker's
admission wins, when a lost worker gives its workload up, and what the AdmissionCheck and
MultiKueueCluster conditions say. The controller (``pykueue/controller/multikueue/``) carries them
out; the simulator can play the same rules on virtual time.

Upstream: pkg/controller/admissionchecks/multikueue (workload.go, admissioncheck.go,
multikueuecluster.go) and pkg/controller/workloaddispatcher (the incremental dispatcher).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pykueue.engine import model
from pykueue.engine.model import MULTIKUEUE_ALL_AT_ONCE, MULTIKUEUE_INCREMENTAL

CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
INCREMENTAL_BATCH = 3  # clusters added per round by the incremental dispatcher
INCREMENTAL_ROUND_SECONDS = 300.0  # a round's length before the next clusters are added


NO_ADAPTER = "No multikueue adapter found"  # a Workload with no owner: nothing to hand over
UNMANAGED = "The owner is not managed by Kueue: "  # the Rejected check's message, before the reason


def managed_by_reason(managed_by: str, field: str = "spec.managedBy") -> str | None:
    """Upstream's IsJobManagedByKueue for the kinds with a managedBy field (``field``: a Job's
    ``spec.managedBy``, a Kubeflow job's ``spec.runPolicy.managedBy``): None when the job is
    MultiKueue's, else why not (after ``UNMANAGED`` in the check's message)."""
    if managed_by == CONTROLLER_NAME:
        return None
    return f'Expecting {field} to be "{CONTROLLER_NAME}" not "{managed_by}"'


def builtin_dispatcher(name: str) -> bool:
    """The dispatchers Kueue runs itself; any other name leaves ``status.nominatedClusterNames`` to an
    external controller, which MultiKueue then follows."""
    return name in (MULTIKUEUE_ALL_AT_ONCE, MULTIKUEUE_INCREMENTAL)


def all_at_once(clusters: list[str] | tuple[str, ...]) -> list[str]:
    """AllAtOnce: every usable worker of the MultiKueueConfig at once (sorted, so a write is stable)."""
    return sorted(clusters)


def incremental_round(nominated: list[str] | tuple[str, ...], clusters: list[str] | tuple[str, ...],
                      round_started: float | None, now: float) -> tuple[list[str] | None, float | None]:
    """Incremental: ``(new nominations, seconds to wait)``. A round lasts ``INCREMENTAL_ROUND_SECONDS``;
    then up to ``INCREMENTAL_BATCH`` clusters not yet nominated, in name order, join those already
    nominated. None when nothing changes now (the wait says when to ask again; None: never, every
    cluster has been offered)."""
    if round_started is not None and now - round_started <= INCREMENTAL_ROUND_SECONDS:
        return None, INCREMENTAL_ROUND_SECONDS - (now - round_started)
    offered = set(nominated)
    rest = sorted(c for c in set(clusters) if c not in offered)
    if not rest:
        return None, None
    return [*nominated, *rest[:INCREMENTAL_BATCH]], INCREMENTAL_ROUND_SECONDS


def first_admitted(admitted_at: dict[str, str | None]) -> str | None:
    """The worker whose copy was admitted first (the earliest Admitted transition; a tie by name), or
    None. ``admitted_at``: worker -> the RFC 3339 time its copy turned Admitted, None when it has not."""
    found = sorted((at, name) for name, at in admitted_at.items() if at is not None)
    return found[0][1] if found else None


@dataclass(frozen=True, slots=True)
class Reserving:
    """What the manager's Workload gets once ``winner``'s copy is the reserving one (upstream's
    syncReservingRemoteState): ``write`` the check Ready (``The workload got reservation on "W"``),
    ``status.clusterName`` the winner and no nominations; or nothing, with ``refused`` saying why when
    the Workload already names another worker (the reconcile then fails and is retried)."""

    write: bool
    refused: str | None = None


def reserving(check_state: str | None, cluster_name: str | None, winner: str) -> Reserving:
    """``status.clusterName`` is immutable once set (the Workload CRD's rule ``clusterName is immutable
    once set``, and upstream checks it before writing), so when a worker back from an outage holds a
    copy admitted before the current winner's, that copy wins (its job runs on, the other is removed)
    but the Workload keeps naming the other worker and its check stays as it is. A check that is
    Retry or Rejected is not written either; one already Ready for this winner has nothing new."""
    if check_state in (model.CheckState.RETRY, model.CheckState.REJECTED):
        return Reserving(False)
    if cluster_name and cluster_name != winner:
        return Reserving(False, f'attempting to change immutable ClusterName from "{cluster_name}" to "{winner}"')
    return Reserving(check_state != model.CheckState.READY or cluster_name != winner)


WORKER_LOST_SINCE_ANNOTATION = "kueue.x-k8s.io/multikueue-worker-lost-since"


def worker_lost_wait(lost_since: float, now: float, timeout: float) -> float:
    """Seconds left before a workload whose worker is unreachable is given up (0: now)."""
    return max(0.0, timeout - (now - lost_since))


@dataclass(frozen=True, slots=True)
class LostWorker:
    """What a Ready workload whose reserving worker cannot be seen does now: ``record`` the instant (Unix
    seconds, whole) to write to its ``WORKER_LOST_SINCE_ANNOTATION`` (None: it is there already), then
    wait ``wait`` seconds (0: give the workload up now)."""

    record: float | None
    wait: float


def lost_worker(since: float | None, now: float, timeout: float) -> LostWorker:
    """The worker-lost wait, counted from the instant kept on the Workload itself (upstream's
    ``kueue.x-k8s.io/multikueue-worker-lost-since``, read into ``since``; None when absent or
    unreadable), so a manager restarted during the outage waits what was left, not ``timeout`` afresh.
    The first sight records ``now`` to the second, as RFC 3339 keeps it."""
    if since is None:
        recorded = float(math.floor(now))
        return LostWorker(recorded, worker_lost_wait(recorded, now, timeout))
    return LostWorker(None, worker_lost_wait(since, now, timeout))


@dataclass(frozen=True, slots=True)
class Condition:
    status: bool
    reason: str
    message: str


def check_active(clusters: list[str], missing: list[str], inactive: list[str]) -> Condition:
    """The MultiKueue AdmissionCheck's ``Active`` condition from its config's clusters: active while at
    least one is usable (``SomeActiveClusters`` when some are not), ``NoUsableClusters`` otherwise."""
    unusable = len(missing) + len(inactive)
    if not unusable:
        return Condition(True, "Active", "The admission check is active")
    parts = []
    if missing:
        parts.append(f"Missing clusters: [{' '.join(missing)}]")
    if inactive:
        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
    if unusable < len(clusters):
        return Condition(True, "SomeActiveClusters", ", ".join(parts))
    return Condition(False, "NoUsableClusters", ", ".join(parts))


BAD_CONFIG = "BadConfig"


def bad_parameters(parameters: object) -> str | None:
    """Why an AdmissionCheck's ``spec.parameters`` cannot name a MultiKueueConfig (upstream's
    ConfigHelper errors), or None."""
    if not isinstance(parameters, dict) or not parameters:
        return "missing parameters reference"
    if (parameters.get("apiGroup") != "kueue.x-k8s.io" or parameters.get("kind") != "MultiKueueConfig"
            or not parameters.get("name")):
        return "bad parameters reference"
    return None
