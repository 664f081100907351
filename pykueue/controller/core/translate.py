"""API objects as the server holds them -> engine objects, through the same API layer `simulate` uses.

Each object goes through `pykueue.api.loader.load_documents`, so the controller validates, defaults,
normalises and converts exactly as the simulator does; what the server adds (uid, managedFields,
resourceVersion, status of queue objects) and the simulator's own annotations are removed first.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import orjson

from pykueue.api.inputs import Inputs
from pykueue.api.loader import load_documents
from pykueue.engine import model
from pykueue.engine.workload import ON_HOLD
from pykueue.kube.objects import condition as condition
from pykueue.kube.objects import is_true as is_true
from pykueue.quantity import to_canonical

KEPT_METADATA = ("name", "namespace", "labels", "annotations", "generation")
SIM_ANNOTATION_PREFIX = "pykueue.dev/"
CACHE_LIMIT = 4096  # Workload shapes kept converted


def parse_time(stamp: str | None) -> float | None:
    """RFC 3339 from the API server -> Unix seconds."""
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def clean(obj: dict[str, Any], *, keep_status: bool = False) -> dict[str, Any]:
    """The object as a user would have written it."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in KEPT_METADATA if k in meta}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if not k.startswith(SIM_ANNOTATION_PREFIX) and k != "kubectl.kubernetes.io/last-applied-configuration"}
    if annotations:
        kept["annotations"] = annotations
    else:
        kept.pop("annotations", None)
    kept.pop("generation", None)
    out = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    out["metadata"] = kept
    if keep_status and obj.get("status"):
        out["status"] = obj["status"]
    return out


def _load(docs: list[dict[str, Any]], what: str) -> tuple[Inputs, list[str]]:
    inputs, problems = load_documents(list(docs), what)
    return inputs, [f"{p.path}: {p.message}" for p in problems]


def queue_object(obj: dict[str, Any]) -> tuple[object | None, list[str]]:
    """A ResourceFlavor, ClusterQueue, Cohort, LocalQueue, AdmissionCheck or Namespace in engine form."""
    kind = obj.get("kind", "")
    inputs, problems = _load([clean(obj)], kind)
    if problems:
        return None, problems
    found = {
        "ResourceFlavor": inputs.resource_flavors,
        "ClusterQueue": inputs.cluster_queues,
        "Cohort": inputs.cohorts,
        "LocalQueue": inputs.local_queues,
        "AdmissionCheck": inputs.admission_checks,
        "Namespace": inputs.namespaces,
    }.get(kind, [])
    return (found[0] if found else None), []


def workload(obj: dict[str, Any], classes: list[dict[str, Any]],
             cache: dict[bytes, model.Workload] | None = None) -> tuple[model.Workload | None, list[str]]:
    """A Workload in engine form: priority resolved against `classes` (PriorityClass and
    WorkloadPriorityClass objects), creation time in Unix seconds, a recorded admission kept.

    With `cache` (which its owner empties whenever `classes` change), a Workload that differs from
    one converted before only in its name takes that conversion, renamed: the API layer validates
    each shape once, not the thousands of copies a job template stamps out."""
    doc = clean(obj)
    status = obj.get("status") or {}
    kept: dict[str, Any] = {}
    if status.get("admission") and _holds_quota(status):
        kept["admission"] = status["admission"]
    if status.get("reclaimablePods"):  # charged less whether it holds quota or queues again
        kept["reclaimablePods"] = status["reclaimablePods"]
    if kept:
        doc["status"] = kept
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp")) or 0.0
    name = doc["metadata"].get("name")
    shape = b""
    if cache is not None and isinstance(name, str):
        shape = orjson.dumps({**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "name"}},
                             option=orjson.OPT_SORT_KEYS)
        hit = cache.get(shape)
        if hit is not None:
            return _restored(dataclasses.replace(hit, name=name, creation_time=created), status), []
    inputs, problems = _load([*(clean(c) for c in classes), doc], "Workload")
    if problems:
        return None, problems
    if not inputs.workloads:
        return None, ["the API layer produced no workload"]
    converted = dataclasses.replace(inputs.workloads[-1].workload, creation_time=created)
    if shape:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[shape] = converted
    return _restored(converted, status), []


def _restored(wl: model.Workload, status: dict[str, Any]) -> model.Workload:
    """What the status says of a workload's progress on the wall clock: the execution time its past
    admissions used, whether its job holds it (OnHold), and for one that holds quota when it is read, whether it is admitted (all checks
    Ready), since when, and whether its pods are ready; the engine's timers continue from there."""
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    accumulated = status.get("accumulatedPastExecutionTimeSeconds")
    changes: dict[str, Any] = {}
    if isinstance(accumulated, int) and accumulated > 0:
        changes["accumulated_execution_seconds"] = accumulated
    reserved = conditions.get("QuotaReserved")
    if wl.admission is None and reserved is not None and reserved.get("status") == "False" \
            and reserved.get("reason") == ON_HOLD:
        changes["on_hold"] = True  # its job held it (a StatefulSet at zero): not queued until let go
    if wl.admission is not None:
        admitted = conditions.get("Admitted")
        changes["admitted"] = admitted is None or admitted.get("status") == "True"
        if admitted is not None and admitted.get("status") == "True":
            changes["admitted_time"] = parse_time(admitted.get("lastTransitionTime"))
            ready = conditions.get("PodsReady")
            changes["pods_ready"] = ready is not None and ready.get("status") == "True"
        evicted = conditions.get("Evicted")
        if evicted is not None and evicted.get("status") == "True":
            # evicted, its job not yet seen stopped: the engine holds the quota until it is
            changes["evicted"] = str(evicted.get("reason") or "Evicted")
        checks = status.get("admissionChecks") or []
        changes["check_states"] = {c["name"]: str(c.get("state", "Pending")) for c in checks
                                   if isinstance(c, dict) and c.get("name")}
    return dataclasses.replace(wl, **changes) if changes else wl


HELD_INVALID = "HeldInvalid"  # model.Workload.kind of a stand-in for an invalid Workload that holds quota


def held_invalid(obj: dict[str, Any]) -> model.Workload | None:
    """A Workload whose spec fails validation but whose status holds quota (QuotaReserved=True with an
    admission): a stand-in that charges what the admission records, so it stays counted while its job
    runs. None when there is no readable admission to count."""
    status = obj.get("status") or {}
    admission = status.get("admission")
    if not isinstance(admission, dict) or not _holds_quota(status) or not admission.get("clusterQueue"):
        return None
    pod_sets, assignments = [], []
    try:
        for i, psa in enumerate(admission.get("podSetAssignments") or []):
            name, count = str(psa.get("name") or f"ps{i}"), max(1, int(psa.get("count") or 1))
            usage = {res: to_canonical(res, qty) for res, qty in (psa.get("resourceUsage") or {}).items()}
            requests = {res: -(-total // count) for res, total in usage.items()}  # rounded up: never less
            flavors = {str(res): str(flavor) for res, flavor in (psa.get("flavors") or {}).items()}
            pod_sets.append(model.PodSet(name, count, requests))
            assignments.append(model.PodSetAssignment(name, count, flavors))
    except (TypeError, ValueError, AttributeError):
        return None
    meta, spec = obj["metadata"], obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    priority = spec.get("priority")
    return model.Workload(
        meta["namespace"], meta["name"], str(spec.get("queueName") or ""), tuple(pod_sets),
        priority=priority if isinstance(priority, int) else 0, kind=HELD_INVALID,
        creation_time=parse_time(meta.get("creationTimestamp")) or 0.0,
        admission=model.Admission(str(admission["clusterQueue"]), tuple(assignments)))


def reclaimable_pods(obj: dict[str, Any]) -> dict[str, int]:
    """`status.reclaimablePods` as the engine takes it: pod set name -> count."""
    pods = (obj.get("status") or {}).get("reclaimablePods") or []
    return {p["name"]: int(p.get("count") or 0) for p in pods if p.get("name")}


def _holds_quota(status: dict[str, Any]) -> bool:
    """A recorded admission counts while QuotaReserved is True and the workload has not finished."""
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return conditions.get("QuotaReserved") == "True" and conditions.get("Finished") != "True"
