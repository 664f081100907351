"""An elastic job's Workload slices on the job side (upstream's ``workloadslicing`` package): which of its
Workloads stands for it, and what changes when its size does. Pure: the controller carries the writes out.

A job annotated ``kueue.x-k8s.io/elastic-job: "true"`` has one Workload (a slice) per admitted size,
named with the job's generation. Upstream's ``EnsureWorkloadSlices``, over the job's Workloads not yet
finished, oldest first:

- none: a new slice is made (the usual create path);
- one, of the job's size: it stands for the job;
- one not holding quota, or the job scaled down: its counts are updated in place;
- one holding quota and the job scaled up: a new slice is made naming it in
  ``kueue.x-k8s.io/workload-slice-replacement-for``, and the job keeps running meanwhile;
- two (a scale-up pending): the old one is finished ``OutOfSync`` if it lost its quota or was evicted;
  the new one follows the job's size and stands for it while it waits.

The pods of an elastic job are created with the ``kueue.x-k8s.io/elastic-job`` scheduling gate (the Job
webhook puts it in the template) and ungated once the slice they belong to is admitted, so a scale-up
never runs pods the quota has not granted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.jobs.framework.workload import ELASTIC_JOB_ANNOTATION, Manifest

SCHEDULING_GATE = "kueue.x-k8s.io/elastic-job"  # kueue.ElasticJobSchedulingGate
REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"  # workloadslicing.WorkloadSliceReplacementFor
OUT_OF_SYNC = "OutOfSync"  # kueue.WorkloadFinishedReasonOutOfSync
OUT_OF_SYNC_MESSAGE = "The workload slice is out of sync with its parent job"


def enabled(obj: Mapping[str, Any]) -> bool:
    """``workloadslicing.Enabled``: the annotation is "true" (the feature gate is on by default)."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(ELASTIC_JOB_ANNOTATION) == "true"


def _true(workload: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (workload.get("status") or {}).get("conditions") or [])


def _has_quota(workload: Mapping[str, Any]) -> bool:
    return _true(workload, "QuotaReserved")


def _key(workload: Mapping[str, Any]) -> str:
    meta = workload["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def owned_not_finished(workloads: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``FindNotFinishedWorkloads``: the job's Workloads (by owner UID) without Finished=True, oldest first;
    of two made in the same second, the one the other replaces first."""
    meta = job["metadata"]
    uid, namespace = meta.get("uid"), meta.get("namespace")
    found = [w for w in workloads
             if w["metadata"].get("namespace") == namespace and not _true(w, "Finished")
             and any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])]
    replaced = {((w["metadata"].get("annotations") or {}).get(REPLACEMENT_FOR)) for w in found}
    return sorted(found, key=lambda w: (str(w["metadata"].get("creationTimestamp") or ""),
                                        0 if _key(w) in replaced else 1))


def counts(pod_sets: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return {str(p.get("name")): int(p.get("count", 1)) for p in pod_sets}


def scaled_down(old: Mapping[str, int], new: Mapping[str, int]) -> bool:
    """Upstream's ``ScaledDown``: the same pod sets, one with fewer pods and none with more."""
    return (old.keys() == new.keys() and any(new[n] < c for n, c in old.items())
            and not any(new[n] > c for n, c in old.items()))


@dataclass
class Slices:
    """What ``ensure`` decided: the Workload that stands for the job now (None: make one), the
    Workload writes to make first, and the slice a new one replaces."""

    workload: Mapping[str, Any] | None
    updates: list[Manifest] = field(default_factory=list)  # Workloads with new pod-set counts
    finish: list[Mapping[str, Any]] = field(default_factory=list)  # finished OutOfSync
    replaces: str | None = None  # for a new slice: NAMESPACE/NAME of the admitted one it replaces
    incompatible: bool = False  # the pod sets themselves changed: nothing to do


def _with_counts(workload: Mapping[str, Any], want: Mapping[str, int]) -> Manifest:
    updated = copy.deepcopy(dict(workload))
    for pod_set in updated["spec"]["podSets"]:
        pod_set["count"] = want[pod_set["name"]]
    return updated


def _follow(workload: Mapping[str, Any], want: Mapping[str, int], out: Slices) -> Slices:
    """One slice against the job's counts: kept, updated in place, or (a scale-up of one holding
    quota) replaced by a new slice."""
    have = counts(workload["spec"]["podSets"])
    if have.keys() != want.keys():
        return Slices(None, incompatible=True)
    if have == want:
        out.workload = workload
        return out
    if not _has_quota(workload) or scaled_down(have, want):
        updated = _with_counts(workload, want)
        out.updates.append(updated)
        out.workload = updated
        return out
    out.workload, out.replaces = None, _key(workload)
    return out


def ensure(job_pod_sets: Iterable[Mapping[str, Any]], workloads: list[Mapping[str, Any]]) -> Slices:
    """Upstream's ``EnsureWorkloadSlices`` for a job whose Workload would have ``job_pod_sets``, over its
    not-finished Workloads (``owned_not_finished``)."""
    want = counts(job_pod_sets)
    for held in workloads:
        # An evicted slice still holding quota may still own running pods: it stands for the job until its
        # reservation is released (its job stopped), unless an admitted replacement has taken them over.
        if _true(held, "Evicted") and _has_quota(held) and not any(
                _replaces(w) == _key(held) and _true(w, "Admitted") and not _true(w, "Evicted") for w in workloads):
            return Slices(held)
    if not workloads:
        return Slices(None)
    if len(workloads) == 1:
        return _follow(workloads[0], want, Slices(None))
    old, new = workloads[0], workloads[-1]
    out = Slices(None)
    if not _has_quota(old) or _true(old, "Evicted"):
        out.finish.append(old)
    have = counts(new["spec"]["podSets"])
    if have.keys() != want.keys():
        return Slices(None, incompatible=True)
    if have != want:
        out.updates.append(_with_counts(new, want))
        out.workload = out.updates[-1]
    else:
        out.workload = new
    return out


def replacing(built: Manifest, replaces: str) -> Manifest:
    """A new slice that replaces the admitted slice ``replaces`` once admitted."""
    built["metadata"].setdefault("annotations", {})[REPLACEMENT_FOR] = replaces
    return built


def _replaces(workload: Mapping[str, Any]) -> str | None:
    return ((workload.get("metadata") or {}).get("annotations") or {}).get(REPLACEMENT_FOR)


def pending_scale_up(workload: Mapping[str, Any], workloads: Iterable[Mapping[str, Any]]) -> bool:
    """A scale-up slice not admitted yet while the slice it replaces still runs with its quota: the job
    runs on under that one meanwhile."""
    replaces = _replaces(workload)
    if not replaces or _has_quota(workload):
        return False
    return any(_key(w) == replaces and _true(w, "Admitted") and not _true(w, "Evicted") for w in workloads)


def gated(pod: Mapping[str, Any]) -> bool:
    return any(g.get("name") == SCHEDULING_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def to_release(pods: Iterable[Mapping[str, Any]], workload: Mapping[str, Any],
               pod_set: Callable[[Mapping[str, Any], list[str]], str | None]) -> list[Mapping[str, Any]]:
    """The gated pods that may leave the gate: per pod set, at most its admitted count minus the pods
    already past the gate and not ended (terminating ones still run), oldest first. Upstream's
    StartWorkloadSlicePods ungates at most the granted count; a pod whose pod set is unknown stays gated.
    ``pod_set(pod, names)``: the kind's answer to which of the Workload's pod sets a pod counts in."""
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    admitted = {a.get("name"): int(a.get("count") or 0) for a in assignments if a.get("name")}
    names = list(admitted)
    running: dict[str, int] = {}
    waiting: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        name = pod_set(pod, names)
        if name not in admitted:
            continue
        if gated(pod):
            if not (pod.get("metadata") or {}).get("deletionTimestamp"):
                waiting.setdefault(name, []).append(pod)
        elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            running[name] = running.get(name, 0) + 1
    out: list[Mapping[str, Any]] = []
    for name, gated_pods in waiting.items():
        room = admitted[name] - running.get(name, 0)
        gated_pods.sort(key=lambda p: (str(p["metadata"].get("creationTimestamp") or ""), str(p["metadata"].get("name"))))
        out += gated_pods[:max(0, room)]
    return out


def ungate_patch(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON patch that takes the elastic-job gate off ``pod`` (a test of the list first, so a
    concurrent change of the gates makes it fail rather than drop another gate)."""
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    kept = [g for g in gates if g.get("name") != SCHEDULING_GATE]
    return [{"op": "test", "path": "/spec/schedulingGates", "value": gates},
            {"op": "replace", "path": "/spec/schedulingGates", "value": kept}]
