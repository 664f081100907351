"""MultiKueue's per-kind adapters, after upstream's ``jobframework.MultiKueueAdapter`` and each kind's
``*_multikueue_adapter.go``: what the manager's workload reconciler (``multikueue.workloads``) needs to
know of a job kind to run it on a worker. Each adapter says

- which Workload owners are its kind (``owns``) and which local objects stand for one Workload
  (``local_objects``: the owner itself, or every Pod of a pod group);
- whether the manager may hand the object over (``unmanaged``: upstream's IsJobManagedByKueue; the kinds
  with ``spec.managedBy`` must carry ``kueue.x-k8s.io/multikueue``, so no controller runs them here);
- the object a worker gets (``clone``: name, namespace, labels and annotations, the spec, with the
  prebuilt-workload and origin labels and without ``managedBy``, so the worker's controller takes it);
- the status the local object mirrors from the remote one (``mirrored``; None: left as it is);
- the status it shows once its remote copies are given up (``given_up``; None: nothing to change).

The functions are pure: the reconciler reads the caches and writes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.engine import multikueue as mk
from pykueue.jobs.leaderworkerset import workload as lws
from pykueue.jobs.statefulset import workload as statefulset
from pykueue.kube import resources as r

Obj = dict[str, Any]
JOB_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid",
                       "batch.kubernetes.io/job-name")
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
ORIGIN_UID_ANNOTATION = statefulset.ORIGIN_UID_ANNOTATION


def clone_meta(local: Mapping[str, Any], workload: str | None, origin: str) -> Obj:
    """Upstream's CloneObjectMetaForCreation plus SetMultiKueueMeta: name, namespace, labels and
    annotations, with the prebuilt Workload's name (unless None) and this manager's origin as labels."""
    meta = local["metadata"]
    labels = dict(meta.get("labels") or {})
    if workload is not None:
        labels[mk.PREBUILT_WORKLOAD_LABEL] = workload
    labels[mk.ORIGIN_LABEL] = origin
    out: Obj = {"name": meta["name"], "namespace": meta["namespace"], "labels": labels}
    if meta.get("annotations"):
        out["annotations"] = dict(meta["annotations"])
    return out


def _managed_by_rule(local: Mapping[str, Any]) -> str | None:
    return mk.managed_by_reason((local.get("spec") or {}).get("managedBy") or "")


def _spec_without_managed_by(local: Mapping[str, Any]) -> Obj:
    spec = copy.deepcopy(local.get("spec") or {})
    spec.pop("managedBy", None)
    return spec


def _whole_status(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    return copy.deepcopy(remote.get("status") or {})


def _nothing(local: Mapping[str, Any]) -> Obj | None:
    return None


@dataclass(frozen=True, slots=True)
class Adapter:
    resource: r.Resource
    unmanaged: Callable[[Mapping[str, Any]], str | None] = _managed_by_rule
    spec: Callable[[Mapping[str, Any]], Obj] = _spec_without_managed_by
    mirrored: Callable[[Mapping[str, Any], Mapping[str, Any]], Obj | None] = _whole_status
    given_up: Callable[[Mapping[str, Any]], Obj | None] = _nothing
    group_members: bool = False  # a Workload stands for every owner of this kind (a pod group), not one
    origin_uid: bool = False  # the worker's copy names the manager's UID (its Workload is named after it)
    prebuilt: bool = True  # the worker's copy carries the prebuilt-workload label (not a LWS: several Workloads)
    # upstream's MultiKueueMultiWorkloadAdapter: how many Workloads the local object makes (None: one)
    expected_workloads: Callable[[Mapping[str, Any]], int] | None = None

    def owns(self, owner: Mapping[str, Any]) -> bool:
        group = str(owner.get("apiVersion") or "").rpartition("/")[0]
        return owner.get("kind") == self.resource.kind and group == self.resource.group

    def clone(self, local: Mapping[str, Any], workload: str, origin: str) -> Obj:
        meta = clone_meta(local, workload if self.prebuilt else None, origin)
        if self.origin_uid:
            meta.setdefault("annotations", {})[ORIGIN_UID_ANNOTATION] = local["metadata"].get("uid", "")
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, "metadata": meta,
                "spec": self.spec(local)}

    def workloads_of(self, remote: Mapping[str, Any]) -> list[str]:
        """The manager Workloads a worker's object stands for (upstream's WorkloadKeysFor): its prebuilt
        label, or each group's name from the manager's UID for a LWS."""
        if self.resource is r.LEADERWORKERSET:
            if not (remote.get("metadata", {}).get("annotations") or {}).get(ORIGIN_UID_ANNOTATION):
                return []
            return [lws.name_of(remote, i) for i in range(lws.replicas(remote))]
        name = prebuilt_workload(remote)
        return [name] if name else []

    def local_objects(self, workload: Mapping[str, Any], store: Mapping[str, Obj]) -> list[Obj] | None:
        """The manager's objects behind ``workload`` (its owners of this kind, or the controller one);
        None while one of them is not cached yet."""
        meta = workload["metadata"]
        owners = [o for o in meta.get("ownerReferences") or [] if self.owns(o)]
        if not self.group_members:
            owners = [next((o for o in owners if o.get("controller")), owners[0])] if owners else []
        found = [store.get(f"{meta['namespace']}/{o['name']}") for o in owners]
        if not found or any(obj is None for obj in found):
            return None
        return [obj for obj in found if obj is not None]


# ---- batch/v1 Job ------------------------------------------------------------------------------------


def _job_spec(local: Mapping[str, Any]) -> Obj:
    """The manager's Job spec left to the worker's Job controller: without ``managedBy`` and without
    the selector and template labels the manager's API server added (the worker's makes its own)."""
    spec = _spec_without_managed_by(local)
    spec.pop("selector", None)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for label in JOB_TEMPLATE_LABELS:
        template_labels.pop(label, None)
    return spec


def _job_mirrored(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    """The remote Job's status, once the manager's Job is no longer suspended (a suspended Job's
    status is not where it runs)."""
    if (local.get("spec") or {}).get("suspend"):
        return None
    return copy.deepcopy(remote.get("status") or {})


def _job_given_up(local: Mapping[str, Any]) -> Obj | None:
    """Nothing running any more (no Job controller here would ever count its pods down). An
    unsuspended Job keeps its ``startTime``: the API server refuses its removal (the Job is
    suspended on eviction, and its status cleared then)."""
    status = local.get("status") or {}
    if not any(status.get(k) for k in ("active", "ready", "terminating")):
        return None
    kept = ("succeeded", "failed") if (local.get("spec") or {}).get("suspend") else ("succeeded", "failed", "startTime")
    return {k: v for k, v in status.items() if k in kept}


# ---- JobSet ----------------------------------------------------------------------------------------


def _jobset_given_up(local: Mapping[str, Any]) -> Obj | None:
    """No replicated job active or ready (no JobSet controller here counts them down)."""
    status = copy.deepcopy(local.get("status") or {})
    rows = status.get("replicatedJobsStatus") or []
    if not any(row.get("active") or row.get("ready") for row in rows):
        return None
    for row in rows:
        row["active"], row["ready"] = 0, 0
    return status


# ---- RayCluster, RayJob --------------------------------------------------------------------------


def _raycluster_given_up(local: Mapping[str, Any]) -> Obj | None:
    """Reported suspended, as KubeRay reports a suspended cluster whose Pods are gone."""
    status = copy.deepcopy(local.get("status") or {})
    if status.get("state") in (None, "", "suspended"):
        return None
    status["state"] = "suspended"
    return status


def _rayjob_given_up(local: Mapping[str, Any]) -> Obj | None:
    """Reported Suspended, as KubeRay reports a suspended RayJob once its cluster is gone."""
    status = copy.deepcopy(local.get("status") or {})
    if status.get("jobDeploymentStatus") in (None, "", "New", "Suspended", "Complete", "Failed", "ValidationFailed"):
        return None
    status["jobDeploymentStatus"] = "Suspended"
    return status


# ---- Pods (single and pod groups) ------------------------------------------------------------------


def _always_managed(local: Mapping[str, Any]) -> str | None:
    return None


def _pod_spec(local: Mapping[str, Any]) -> Obj:
    return copy.deepcopy(local.get("spec") or {})


def _gated(pod: Mapping[str, Any]) -> bool:
    return any(g.get("name") == ADMISSION_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def _pod_mirrored(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    """The remote Pod's status; a local Pod being deleted is left alone, and one still gated keeps its
    own PodScheduled condition (SchedulingGated: it never schedules here, and a copied Unschedulable
    would read as a scale-up candidate to the manager's autoscaler)."""
    if (local.get("metadata") or {}).get("deletionTimestamp"):
        return None
    status = copy.deepcopy(remote.get("status") or {})
    mine = next((c for c in (local.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
                None)
    if _gated(local) and mine is not None:
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*conditions, copy.deepcopy(mine)]
    return status


# ---- StatefulSet --------------------------------------------------------------------------------------
# Upstream's StatefulSet adapter: the worker gets the StatefulSet with the manager's UID in an annotation,
# so the worker's reconciler names its Workload as the manager's (the copy it already holds) and makes
# none of its own. StatefulSets have no managedBy: the manager's own controller keeps its status (its
# Pods stay gated there, see ``jobs.pods.dispatched``), so nothing is mirrored.


def _never(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    return None


JOB = Adapter(r.JOB, spec=_job_spec, mirrored=_job_mirrored, given_up=_job_given_up)
JOBSET = Adapter(r.JOBSET, given_up=_jobset_given_up)
RAY_CLUSTER = Adapter(r.RAY_CLUSTER, given_up=_raycluster_given_up)
RAY_JOB = Adapter(r.RAY_JOB, given_up=_rayjob_given_up)
POD = Adapter(r.POD, unmanaged=_always_managed, spec=_pod_spec, mirrored=_pod_mirrored, group_members=True)
STATEFULSET = Adapter(r.STATEFULSET, unmanaged=_always_managed, spec=_pod_spec, mirrored=_never, origin_uid=True)
# ---- LeaderWorkerSet --------------------------------------------------------------------------------
# Upstream's LWS adapter: one Workload per group, all dispatched to one worker (the lowest index nominates,
# the others follow it, see ``multikueue.workloads``); the worker gets the LWS with the manager's UID and
# no prebuilt label, and names its groups' Workloads from that UID (the copies it holds). No managedBy:
# nothing is mirrored back.

LEADERWORKERSET = Adapter(r.LEADERWORKERSET, unmanaged=_always_managed, spec=_pod_spec, mirrored=_never,
                          origin_uid=True, prebuilt=False, expected_workloads=lws.replicas)
ADAPTERS = (JOB, JOBSET, RAY_CLUSTER, RAY_JOB, POD, STATEFULSET, LEADERWORKERSET)


def for_owner(owner: Mapping[str, Any] | None) -> Adapter | None:
    """The adapter for a Workload's owner, None when MultiKueue has none for its kind."""
    if owner is None:
        return None
    return next((a for a in ADAPTERS if a.owns(owner)), None)


def owner_of(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner a Workload is dispatched for (upstream's wlReconciler.adapter): the job-owner
    annotations when they name a known kind (a LWS's groups, whose owner is no controller), else its
    controller, else its first owner."""
    meta = workload.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    gvk, name = annotations.get(lws.OWNER_GVK_ANNOTATION), annotations.get(lws.OWNER_NAME_ANNOTATION)
    adapter = next((a for a in ADAPTERS if gvk == _gvk_string(a.resource)), None)
    if adapter is not None and name:
        return {"apiVersion": adapter.resource.api_version, "kind": adapter.resource.kind, "name": name}
    refs = meta.get("ownerReferences") or []
    return next((o for o in refs if o.get("controller")), None) or next(iter(refs), None)


def _gvk_string(res: r.Resource) -> str:
    group, _, version = res.api_version.rpartition("/")
    return f"{group}/{version}, Kind={res.kind}"


def index_of(workload: Mapping[str, Any]) -> int:
    """Upstream's GetWorkloadIndex: the component index annotation, -1 when absent or not a number."""
    value = ((workload.get("metadata") or {}).get("annotations") or {}).get(lws.INDEX_ANNOTATION)
    try:
        return int(str(value)) if value is not None else -1
    except ValueError:
        return -1


def watched(plurals: Mapping[str, Any]) -> list[r.Resource]:
    """The kinds to watch on a worker: those whose objects the manager caches (its integrations that are on)."""
    return [a.resource for a in ADAPTERS if a.resource.plural in plurals]


def prebuilt_workload(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(mk.PREBUILT_WORKLOAD_LABEL) or "")


@dataclass(frozen=True, slots=True)
class Component:
    """What one of several Workloads of an object (a LWS's groups) does next: wait, follow its siblings
    to ``cluster``, or (the lowest index) nominate workers itself."""

    wait: bool = False
    cluster: str | None = None


def component_step(local: Mapping[str, Any], members: list[Mapping[str, Any]], expected: int) -> Component:
    """Upstream's nominateAndSynchronizeWorkers for a multi-workload adapter: every group's Workload
    must exist first; one a sibling was admitted for (``status.clusterName``) is followed there; else
    only the lowest index nominates. ``members`` are the Workloads of the same owner, ``local`` among
    them. Raises ValueError when siblings sit on different workers."""
    if len(members) < expected:
        return Component(wait=True)
    name = local["metadata"]["name"]
    others = [m for m in members if m["metadata"]["name"] != name]
    clusters = {c for m in others if (c := (m.get("status") or {}).get("clusterName"))}
    if len(clusters) > 1:
        raise ValueError(f"component workloads assigned to different clusters: {sorted(clusters)}")
    if clusters:
        return Component(cluster=clusters.pop())
    mine = index_of(local)
    if mine < 0 or any(0 <= index_of(m) < mine for m in others):
        return Component(wait=True)
    return Component()
