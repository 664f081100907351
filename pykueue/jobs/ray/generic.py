"""RayCluster, RayJob and RayService on the job framework: the GenericJobs the controller reconciles
for them.

The Workload each becomes and what the webhooks refuse are ``pykueue.jobs.ray.workload``'s (shared with the
simulator); this adds the live state upstream's integrations read and the writes that suspend,
start and stop them:

- suspended: ``spec.suspend`` (a RayService's ``spec.rayClusterConfig.suspend``, which KubeRay copies onto
  the cluster it makes); a RayCluster or RayJob starts when it is false (KubeRay's operator creates the
  head and worker Pods, and for a RayJob the submitter Job, only then);
- start (``RunWithPodSetsInfo``): suspend false, and each pod set's admission info (the flavors'
  node labels and tolerations, the ``kueue.x-k8s.io/podset`` label) merged into the template it
  came from: the head group's, each worker group's in order, a RayJob's ``submitterPodTemplate``;
  a RayJob without one gets KubeRay's default submitter template written out with the info merged
  in, so the submitter runs on its flavor's nodes too;
- stop (``RestorePodSetsInfo``): suspend true and each template as the Workload recorded it;
- finished: a RayJob whose ``jobDeploymentStatus`` is ``Complete``, ``Failed`` or ``ValidationFailed``
  (succeeded when its ``jobStatus`` is ``SUCCEEDED``); a RayCluster never finishes by itself, nor does
  a RayService (it serves until deleted);
- pods ready: the cluster's ``state`` is ``ready`` (a RayJob reads its ``rayClusterStatus``); a
  RayService's ``Ready`` condition is true (which is also what makes it active).

A RayCluster that a RayJob or a RayService owns is that one's to queue (``owned_by_ray_job``):
upstream skips objects whose controller is an object Kueue manages.

An elastic RayJob or RayService (``kueue.x-k8s.io/elastic-job: "true"``) with in-tree autoscaling is
sized by its live cluster (a RayJob's ``status.rayClusterName``, a RayService's
``status.activeServiceStatus.rayClusterName``: the cluster KubeRay made from it, whose worker replicas
the autoscaler changes), as upstream's RayJob and RayService both call ``raycluster.UpdatePodSets``: its
worker pod sets count the cluster's replicas, it records those counts and the cluster's generation in
its own annotations (``ray.slicing_annotations``), and a slice is named with both generations, so each
scale of the cluster gets a slice of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pykueue.jobs import framework, slicing
from pykueue.jobs.framework import TemplatesBySuspend
from pykueue.jobs.framework import workload as framework_workload
from pykueue.jobs.framework.podset import PodSetInfoError, merge_template
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.ray import workload as ray

RAY_CLUSTER = "RayCluster"
RAY_JOB = "RayJob"
RAY_SERVICE = ray.RAY_SERVICE
KINDS = {ray.CLUSTER_FRAMEWORK: RAY_CLUSTER, ray.JOB_FRAMEWORK: RAY_JOB, ray.SERVICE_FRAMEWORK: RAY_SERVICE}
SERVICE_READY = "Ready"  # rayv1.RayServiceReady
SIZED_BY_CLUSTER = (RAY_JOB, RAY_SERVICE)  # an elastic one follows the live cluster KubeRay made for it
READY = "ready"  # rayv1.Ready
# rayv1.JobDeploymentStatusComplete, ...Failed, and ...ValidationFailed: KubeRay found the spec invalid and will
# never run it, so it finishes (failed) and its quota goes
FINISHED_DEPLOYMENT = ("Complete", "Failed", "ValidationFailed")
SUCCEEDED = "SUCCEEDED"  # rayv1.JobStatusSucceeded


def owned_by_ray_job(obj: Mapping[str, Any]) -> bool:
    """A RayCluster KubeRay made for a RayJob or a RayService: its controller owner is that one."""
    return any(o.get("controller") and o.get("kind") in (RAY_JOB, RAY_SERVICE)
               and (o.get("apiVersion") or "").startswith("ray.io/")
               for o in (obj.get("metadata") or {}).get("ownerReferences") or [])


def owning_ray_job(obj: Mapping[str, Any], kind: str = RAY_JOB) -> str | None:
    """The name of the RayJob (or, with ``kind``, the RayService) that controls this RayCluster, if one does."""
    return next((o.get("name") for o in (obj.get("metadata") or {}).get("ownerReferences") or []
                 if o.get("controller") and o.get("kind") == kind
                 and (o.get("apiVersion") or "").startswith("ray.io/")), None)


def is_managed(obj: Mapping[str, Any], manage_without_queue_name: bool) -> bool:
    """Kueue queues it: it names a LocalQueue (or every object is queued), it is not a RayJob's own
    cluster, and it is not a RayJob that only selects an existing cluster."""
    if owned_by_ray_job(obj) or not ray.is_managed(obj):
        return False
    return framework_workload.is_managed(obj) or manage_without_queue_name


def cluster_spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The RayClusterSpec inside ``obj``: a RayCluster's ``spec``, a RayJob's or RayService's
    ``spec.rayClusterSpec``, a RayService's ``spec.rayClusterConfig``."""
    spec = obj["spec"]
    return spec[ray.cluster_field(obj)] if obj.get("kind") in (RAY_JOB, RAY_SERVICE) else spec


def suspend_holder(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping whose ``suspend`` stops ``obj``: a RayService's cluster spec (upstream's
    ``Spec.RayClusterSpec.Suspend``), else the object's ``spec``."""
    return cluster_spec(obj) if obj.get("kind") == RAY_SERVICE else obj["spec"]


def _k8s_job_mode(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == RAY_JOB and (obj["spec"].get("submissionMode") or ray.K8S_JOB_MODE) == ray.K8S_JOB_MODE


def templates(obj: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The templates (in ``obj`` itself) behind each pod set, in pod set order; None for a RayJob's
    default submitter, which has no template in the object."""
    spec = cluster_spec(obj)
    found: list[dict[str, Any] | None] = [spec["headGroupSpec"].setdefault("template", {})]
    found += [group.setdefault("template", {}) for group in spec.get("workerGroupSpecs") or []]
    if _k8s_job_mode(obj):
        found.append(obj["spec"].get("submitterPodTemplate"))
    return found


def with_pod_sets_info(obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *, restore: bool) -> dict[str, Any]:
    """``RunWithPodSetsInfo`` (``restore=False``: suspend false, the infos merged in) or
    ``RestorePodSetsInfo`` plus ``Suspend`` (``restore=True``), as a new object. One info per pod
    set, else ``PodSetInfoError``."""
    new = copy.deepcopy(dict(obj))
    if not restore and _k8s_job_mode(new) and new["spec"].get("submitterPodTemplate") is None:
        # KubeRay would run its default submitter, which has no template to carry the admission: write
        # that default out, so the flavor's node selector and tolerations reach the submitter too
        new["spec"]["submitterPodTemplate"] = ray.default_submitter_template(new)
    found = templates(new)
    if len(infos) != len(found):
        raise PodSetInfoError(f"invalid podset infos: expecting {len(found)} podsets, got {len(infos)}")
    suspend_holder(new)["suspend"] = restore
    for template, info in zip(found, infos, strict=True):
        if template is not None:
            merged = merge_template(copy.deepcopy(template), info, restore)
            template.clear()
            template.update(merged)
    return new


def live_cluster_name(obj: Mapping[str, Any]) -> str:
    """The RayCluster KubeRay runs for a RayJob (``status.rayClusterName``) or a RayService (its active
    cluster); "" for none yet or a RayCluster."""
    status = obj.get("status") or {}
    if obj.get("kind") == RAY_JOB:
        return status.get("rayClusterName") or ""
    if obj.get("kind") == RAY_SERVICE:
        return (status.get("activeServiceStatus") or {}).get("rayClusterName") or ""
    return ""


class RayObject(TemplatesBySuspend):
    """A managed RayCluster, RayJob or RayService; ``cluster``: a RayJob's live RayCluster, if cached."""

    api_version = ray.API_VERSION
    sliced = True

    def gated_pods_selector(self) -> str | None:
        """The pods of its cluster: a RayCluster's own; a RayJob's or RayService's (active) cluster's,
        once KubeRay has made one."""
        if self.kind == RAY_CLUSTER:
            return f"ray.io/cluster={self.meta.get('name')}"
        status = self.obj.get("status") or {}
        if self.kind == RAY_SERVICE:
            status = status.get("activeServiceStatus") or {}
        cluster = status.get("rayClusterName")
        return f"ray.io/cluster={cluster}" if cluster else None

    def lingering_pods(self) -> tuple[str, ...]:
        """Its clusters' Pods (KubeRay's ``ray.io/cluster`` label), which no status of it counts once
        KubeRay reports it suspended: a suspended RayCluster's Pods are being deleted then, and a
        RayJob's or RayService's cluster is deleted (its Pods collected after it) before the status
        says Suspended, its name cleared from the status; so the clusters known to have been its (the
        live one, the cached ones it controls, the deleted ones) are listed. A RayJob's submitter Job is
        deleted too: its Pods carry the Job's name, which is the RayJob's."""
        if self.kind == RAY_CLUSTER:
            return (f"ray.io/cluster={self.meta.get('name')}",)
        names = {live_cluster_name(self.obj), *self.child_names, *self.ended_children} - {""}
        out = [f"ray.io/cluster in ({','.join(sorted(names))})"] if names else []
        if self.kind == RAY_JOB:
            out.append(f"batch.kubernetes.io/job-name={self.meta.get('name')}")
        return tuple(out)

    def slice_pod_set(self, pod: Mapping[str, Any], names: list[str]) -> str | None:
        """A Ray cluster's head, or its worker group (KubeRay's ``ray.io/node-type`` and ``ray.io/group``
        labels, the group lower-cased as its pod set)."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get("ray.io/node-type") == "head":
            return "head"
        group = labels.get("ray.io/group")
        return group.lower() if isinstance(group, str) else None

    def __init__(self, obj: dict[str, Any], cluster: Mapping[str, Any] | None = None,
                 child_names: Sequence[str] = ()) -> None:
        super().__init__(obj)
        self.kind = obj.get("kind") or RAY_CLUSTER
        self.cluster = cluster
        self.child_names = tuple(child_names)  # the cached RayClusters it controls

    def workload_name(self) -> str:
        # an elastic one's slices are named per generation (a RayJob's with its cluster's) and found by
        # owner (``slicing``)
        generation: int | str | None = None
        if slicing.enabled(self.obj):
            generation = (ray.slice_generation(self.obj) if self.kind in SIZED_BY_CLUSTER
                          else self.meta.get("generation") or 1)
        return workload_name_for_owner(self.kind, ray.GROUP, self.meta["name"], self.meta.get("uid") or None,
                                             generation)

    def _status(self) -> Mapping[str, Any]:
        return self.obj.get("status") or {}

    def is_suspended(self) -> bool:
        return bool(suspend_holder(self.obj).get("suspend"))

    def suspend(self) -> list[framework.Action]:
        if self.kind != RAY_SERVICE:
            return super().suspend()
        return [framework.Patch(self.kind, self.namespace, self.meta["name"],
                                {"spec": {ray.SERVICE_CLUSTER_FIELD: {"suspend": True}}}),
                framework.Note("suspended until its workload is admitted", {"object": self.describe()})]

    def _service_ready(self) -> bool:
        return any(c.get("type") == SERVICE_READY and c.get("status") == "True"
                   for c in self._status().get("conditions") or [])

    def finished(self) -> tuple[bool, bool, str]:
        if self.kind != RAY_JOB:
            return False, False, ""
        status = self._status()
        if status.get("jobDeploymentStatus") not in FINISHED_DEPLOYMENT:
            return False, False, ""
        return True, status.get("jobStatus") == SUCCEEDED, status.get("message") or ""

    def is_active(self) -> bool:
        """Running, or suspended while KubeRay has not yet reported its Pods gone (a RayService:
        its ``Ready`` condition, as upstream's ``IsActive``)."""
        if self.kind == RAY_SERVICE:
            return self._service_ready()
        if not self.is_suspended():
            return True
        status = self._status()
        if self.kind == RAY_JOB:
            return status.get("jobDeploymentStatus") not in (None, "", "New", "Suspended", *FINISHED_DEPLOYMENT)
        return status.get("state") not in (None, "", "suspended")

    def pods_ready(self) -> bool:
        if self.kind == RAY_SERVICE:
            return self._service_ready()
        status = self._status()
        cluster = (status.get("rayClusterStatus") or {}) if self.kind == RAY_JOB else status
        return cluster.get("state") == READY

    def reclaimable_pods(self) -> dict[str, int]:
        return {}

    def build_workload(self) -> dict[str, Any] | None:
        built = ray.workload_from_ray(self.obj)
        if self.kind in SIZED_BY_CLUSTER and slicing.enabled(self.obj):
            built["metadata"]["name"] = self.workload_name()  # with its cluster's recorded generation
            if self.cluster is not None and ray.autoscales(self.obj):
                ray.with_live_counts(built["spec"]["podSets"], self.cluster, self.meta["name"])
        return built

    def slicing_annotations(self) -> dict[str, str]:
        """What an elastic RayJob or RayService records of its live cluster on itself (nothing for a
        RayCluster or a job that is not elastic)."""
        if self.kind not in SIZED_BY_CLUSTER or not slicing.enabled(self.obj):
            return {}
        built = self.build_workload()
        return {} if built is None else ray.slicing_annotations(built["spec"]["podSets"], self.cluster)

    def with_pod_sets_info(self, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                           restore: bool) -> dict[str, Any]:
        return with_pod_sets_info(obj, infos, restore=restore)


def wrap(obj: dict[str, Any], clusters: Sequence[Mapping[str, Any]]) -> RayObject:
    """The GenericJob of a managed RayCluster, RayJob or RayService; a RayJob's or RayService's live
    cluster (the one its status names) among the cached RayClusters it controls."""
    name = live_cluster_name(obj)
    live = next((c for c in clusters if name and (c.get("metadata") or {}).get("name") == name), None)
    return RayObject(obj, live, [str((c.get("metadata") or {}).get("name") or "") for c in clusters])


def parent_of(kind: str) -> Callable[[Mapping[str, Any]], str | None]:
    """Which RayJob (or RayService) controls a RayCluster."""
    return lambda cluster: owning_ray_job(cluster, kind)
