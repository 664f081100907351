"""The KubeRay integrations, as upstream's (``pkg/controller/jobs/raycluster``, ``.../rayjob``,
``.../rayservice``): ``ray.io/v1`` RayCluster, RayJob and RayService, each one Workload named
``raycluster-NAME-<hash>`` / ``rayjob-NAME-<hash>`` / ``rayservice-NAME-<hash>``
(``GetWorkloadNameForOwnerWithGVK``). A RayService is a serving workload: its
cluster spec (``spec.rayClusterConfig``; Go's field ``RayClusterSpec``, the name upstream's webhook
messages use) gives the pod sets as a RayCluster's would, and it never finishes.

Pod sets (``BuildPodSets``): ``head`` with count 1 and the head group's template, then one per
``workerGroupSpecs`` entry, named as its ``groupName`` lower-cased, count ``replicas`` (default 1)
times ``numOfHosts`` when that is above 1 (``minReplicas``/``maxReplicas`` are the autoscaler's and
do not enter the Workload). A RayJob adds ``submitter`` (count 1) when its ``submissionMode`` is
``K8sJobMode``, KubeRay's default: the ``submitterPodTemplate``, or KubeRay's default submitter
(500m cpu and 200Mi requested); in ``SidecarMode`` that default submitter is a container of the head
Pod. With GCS fault tolerance (the ``ray.io/ft-enabled`` annotation or ``gcsFaultToleranceOptions``)
the head's Ray container also reserves KubeRay's Redis cleanup Job (200m cpu, 256Mi). Priority: the ``kueue.x-k8s.io/priority-class`` label, else the
first pod set's template with a ``priorityClassName``.

What the webhooks refuse (field paths are the object's): autoscaling (``enableInTreeAutoscaling``;
upstream allows it only for elastic jobs behind a feature gate), more than 7 worker groups, a
worker group named ``head``; for a RayJob, a ``clusterSelector`` together with ``rayClusterSpec``,
neither of them, and ``shutdownAfterJobFinishes`` not true. A RayJob with only a ``clusterSelector``
runs on an existing cluster and is not managed (``is_managed``).

Run time: a RayJob finishes with its job; a RayCluster never finishes by itself."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import (
    Manifest,
    owner_label_errors,
    owner_workload,
    pod_set_template,
    pod_sets_priority_class_ref,
)
from pykueue.jobs.generic_update import elastic
from pykueue.quantity import parse_quantity

API_VERSION = "ray.io/v1"
GROUP = "ray.io"
CLUSTER_FRAMEWORK = "ray.io/raycluster"
JOB_FRAMEWORK = "ray.io/rayjob"
SERVICE_FRAMEWORK = "ray.io/rayservice"
RAY_SERVICE = "RayService"
SERVICE_CLUSTER_FIELD = "rayClusterConfig"  # RayServiceSpec.RayClusterSpec's JSON name
HEAD = "head"
SUBMITTER = "submitter"
K8S_JOB_MODE = "K8sJobMode"
SIDECAR_MODE = "SidecarMode"
SUBMITTER_CONTAINER = "ray-job-submitter"
FT_ENABLED_ANNOTATION = "ray.io/ft-enabled"
# KubeRay's Redis cleanup Job (GCS fault tolerance), folded into the head pod set's Ray container
REDIS_CLEANUP_REQUESTS = {"cpu": "200m", "memory": "256Mi"}
MAX_WORKER_GROUPS = 7  # Workloads hold at most 8 pod sets, one of them the head
# An elastic RayJob's or RayService's record of its live cluster (upstream's raycluster.common): the pod-set
# counts its newest slice asked for, and the cluster's generation, which names that slice
PODSET_SIZES_ANNOTATION = "kueue.x-k8s.io/raycluster-podset-replica-sizes"
CLUSTER_GENERATION_ANNOTATION = "kueue.x-k8s.io/raycluster-generation"

Errors = list[JobConversionError]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _int(value: object, path: str, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobConversionError(path, f"Invalid value: {value!r}: must be an integer")
    if value < minimum:
        raise JobConversionError(path, f"Invalid value: {value}: must be greater than or equal to {minimum}")
    return value


def _template_errors(template: object, path: str) -> Errors:
    if not isinstance(template, Mapping):
        return [JobConversionError(path, "Required value")]
    spec = template.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        return [JobConversionError(f"{path}.spec.containers", "Required value")]
    return []


def kueue_cluster_rules(spec: Mapping[str, Any], path: str, elastic: bool = False) -> Errors:
    """Kueue's own rules for a RayCluster spec at ``path`` (upstream's ``raycluster.ValidateCreate``):
    no autoscaling unless the job is elastic, at most seven worker groups, none named ``head``."""
    errors: Errors = []
    if spec.get("enableInTreeAutoscaling") is True and not elastic:
        errors.append(JobConversionError(
            f"{path}.enableInTreeAutoscaling",
            "Invalid value: true: a kueue managed job can use autoscaling only when the "
            "ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job"))
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        return errors
    if len(groups) > MAX_WORKER_GROUPS:
        errors.append(JobConversionError(f"{path}.workerGroupSpecs",
                                         f"Too many: {len(groups)}: must have at most {MAX_WORKER_GROUPS} items"))
    for i, group in enumerate(groups):
        if isinstance(group, Mapping) and group.get("groupName") == HEAD:
            errors.append(JobConversionError(f"{path}.workerGroupSpecs[{i}].groupName",
                                             f'Forbidden: "{HEAD}" is reserved for the head group'))
    return errors


def cluster_spec_errors(spec: Mapping[str, Any], path: str, elastic: bool = False) -> Errors:
    """The CRD's required fields and Kueue's ``ValidateCreate`` for a RayCluster spec at ``path``."""
    errors: Errors = []
    head = spec.get("headGroupSpec")
    if not isinstance(head, Mapping):
        errors.append(JobConversionError(f"{path}.headGroupSpec", "Required value"))
    else:
        errors += _template_errors(head.get("template"), f"{path}.headGroupSpec.template")
    errors += kueue_cluster_rules(spec, path, elastic)
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        return [*errors, JobConversionError(f"{path}.workerGroupSpecs", "must be a list")]
    seen: set[str] = set()
    for i, group in enumerate(groups):
        gpath = f"{path}.workerGroupSpecs[{i}]"
        if not isinstance(group, Mapping):
            errors.append(JobConversionError(gpath, "must be an object"))
            continue
        name = group.get("groupName")
        if not isinstance(name, str) or not name:
            errors.append(JobConversionError(f"{gpath}.groupName", "Required value"))
        elif name != HEAD and name.lower() in seen:
            errors.append(JobConversionError(f"{gpath}.groupName", f'Duplicate value: "{name}"'))
        elif name != HEAD:
            seen.add(name.lower())
        errors += _template_errors(group.get("template"), f"{gpath}.template")
        for key, minimum in (("replicas", 0), ("numOfHosts", 1)):
            try:
                _int(group.get(key), f"{gpath}.{key}", 1, minimum)
            except JobConversionError as err:
                errors.append(err)
    return errors


def gcs_fault_tolerance(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> bool:
    """KubeRay's ``IsGCSFaultToleranceEnabled``: the ``ray.io/ft-enabled`` annotation (of the object
    that owns the cluster spec) or ``gcsFaultToleranceOptions``."""
    value = annotations.get(FT_ENABLED_ANNOTATION)
    return (isinstance(value, str) and value.lower() == "true") or spec.get("gcsFaultToleranceOptions") is not None


def _keep_max(requests: Mapping[str, Any], limits: Mapping[str, Any], extra: Mapping[str, str]) -> dict[str, Any]:
    """``MergeResourceListKeepMax`` over the requests as the API server defaults them (a limit
    stands in for a missing request)."""
    merged: dict[str, Any] = {**limits, **requests}
    for name, value in extra.items():
        if name not in merged or parse_quantity(value) > parse_quantity(merged[name]):
            merged[name] = value
    return merged


def _account_for_redis_cleanup(template: dict[str, Any]) -> None:
    container = template["spec"]["containers"][0]  # KubeRay's RayContainerIndex
    resources = container.setdefault("resources", {})
    resources["requests"] = _keep_max(resources.get("requests") or {}, resources.get("limits") or {},
                                      REDIS_CLEANUP_REQUESTS)


def pod_sets_for_cluster_spec(spec: Mapping[str, Any], annotations: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """``BuildPodSets``: ``head`` (count 1), then each worker group (replicas x numOfHosts). With GCS
    fault tolerance (``annotations`` are the owner's) the head's Ray container also reserves what
    KubeRay's Redis cleanup Job requests (200m cpu, 256Mi), whichever is more per resource."""
    pod_sets = [{"name": HEAD, "count": 1, "template": pod_set_template(spec["headGroupSpec"]["template"])}]
    if gcs_fault_tolerance(spec, annotations or {}):
        _account_for_redis_cleanup(pod_sets[0]["template"])
    for group in spec.get("workerGroupSpecs") or []:
        count = group.get("replicas")
        count = 1 if count is None else count
        hosts = group.get("numOfHosts") or 1
        if hosts > 1:
            count *= hosts
        pod_sets.append({"name": group["groupName"].lower(), "count": count,
                         "template": pod_set_template(group["template"])})
    return pod_sets


def template_paths(obj: Mapping[str, Any]) -> list[str]:
    """The object's field path of each pod set's template, in pod set order (to point a problem
    found in the Workload back at the object)."""
    if obj.get("kind") in ("RayJob", RAY_SERVICE):
        field = cluster_field(obj)
        base = f"spec.{field}"
        spec = _spec(obj).get(field) or {}
    else:
        base, spec = "spec", _spec(obj)
    paths = [f"{base}.headGroupSpec.template"]
    paths += [f"{base}.workerGroupSpecs[{i}].template" for i in range(len(spec.get("workerGroupSpecs") or []))]
    if obj.get("kind") == "RayJob" and _submission_mode(obj) == K8S_JOB_MODE:
        paths.append("spec.submitterPodTemplate")
    return paths


def _submission_mode(job: Mapping[str, Any]) -> str:
    return _spec(job).get("submissionMode") or K8S_JOB_MODE  # the CRD's default


def _submitter_resources() -> dict[str, Any]:
    """KubeRay's default submitter container resources."""
    return {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}


def default_submitter_template(job: Mapping[str, Any]) -> dict[str, Any]:
    """KubeRay's submitter Job template when the RayJob gives none (image: the head's)."""
    head = _spec(job)["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container = {"name": SUBMITTER_CONTAINER, "image": head.get("image", ""), "resources": _submitter_resources()}
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def pod_sets_for_job(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A RayJob's pod sets: its cluster's (GCS fault tolerance read from the RayJob's annotations),
    then ``submitter`` in ``K8sJobMode``; in ``SidecarMode`` KubeRay runs the default submitter as
    a container of the head Pod, so the head pod set carries it."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    pod_sets = pod_sets_for_cluster_spec(_spec(job)["rayClusterSpec"], annotations)
    mode = _submission_mode(job)
    if mode == K8S_JOB_MODE:
        template = _spec(job).get("submitterPodTemplate") or default_submitter_template(job)
        pod_sets.append({"name": SUBMITTER, "count": 1, "template": pod_set_template(template)})
    elif mode == SIDECAR_MODE:
        containers = pod_sets[0]["template"]["spec"].setdefault("containers", [])
        containers.append({"name": SUBMITTER_CONTAINER, "resources": _submitter_resources()})
    return pod_sets


def is_managed(obj: Mapping[str, Any]) -> bool:
    """A RayJob that only selects an existing cluster (``clusterSelector``) is not Kueue's."""
    spec = _spec(obj)
    return not (obj.get("kind") == "RayJob" and spec.get("clusterSelector") and spec.get("rayClusterSpec") is None)


def cluster_field(obj: Mapping[str, Any]) -> str:
    """Where a RayJob (``rayClusterSpec``) or a RayService (``rayClusterConfig``) holds its cluster spec."""
    return SERVICE_CLUSTER_FIELD if obj.get("kind") == RAY_SERVICE else "rayClusterSpec"


def _service_errors(obj: Mapping[str, Any]) -> Errors:
    """A RayService: the CRD requires its cluster spec; Kueue's webhook holds it to a RayCluster's rules."""
    path = f"spec.{SERVICE_CLUSTER_FIELD}"
    cluster = _spec(obj).get(SERVICE_CLUSTER_FIELD)
    if not isinstance(cluster, Mapping):
        return [JobConversionError(path, "Required value")]
    return cluster_spec_errors(cluster, path, elastic(obj))


def validate(obj: Mapping[str, Any]) -> Errors:
    """Every reason the API server or Kueue's webhook would refuse this RayCluster, RayJob or RayService."""
    errors = owner_label_errors(obj)
    spec = _spec(obj)
    if obj.get("kind") == RAY_SERVICE:
        return errors + _service_errors(obj)
    if obj.get("kind") != "RayJob":
        return errors + cluster_spec_errors(spec, "spec", elastic(obj))
    selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return [*errors, JobConversionError(
            "spec.clusterSelector", "Invalid value: a kueue managed job should not use an existing cluster")]
    if not isinstance(cluster, Mapping):
        return [*errors, JobConversionError(
            "spec.rayClusterSpec",
            "Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector")]
    if spec.get("shutdownAfterJobFinishes") is not True:
        errors.append(JobConversionError(
            "spec.shutdownAfterJobFinishes",
            "Invalid value: false: a kueue managed job should delete the cluster after finishing"))
    errors += cluster_spec_errors(cluster, "spec.rayClusterSpec", elastic(obj))
    mode = spec.get("submissionMode")
    if mode is not None and mode not in (K8S_JOB_MODE, "HTTPMode", "InteractiveMode", "SidecarMode"):
        errors.append(JobConversionError(
            "spec.submissionMode",
            f'Unsupported value: "{mode}": supported values: "K8sJobMode", "HTTPMode", "InteractiveMode", '
            '"SidecarMode"'))
    submitter = spec.get("submitterPodTemplate")
    if submitter is not None and _submission_mode(obj) == K8S_JOB_MODE:
        errors += _template_errors(submitter, "spec.submitterPodTemplate")
    return errors


def _pod_sets(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The object's pod sets: a RayJob's (``pod_sets_for_job``), a RayService's cluster's, a RayCluster's."""
    if obj.get("kind") == "RayJob":
        return pod_sets_for_job(obj)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    spec = _spec(obj)
    return pod_sets_for_cluster_spec(spec[SERVICE_CLUSTER_FIELD] if obj.get("kind") == RAY_SERVICE else spec,
                                     annotations)


def workload_from_ray(obj: Mapping[str, Any]) -> Manifest:
    """The v1beta2 Workload upstream's RayCluster, RayJob or RayService reconciler creates for ``obj``;
    raises the first ``JobConversionError`` of ``validate`` for an object the webhook would refuse."""
    errors = validate(obj)
    if errors:
        raise errors[0]
    kind = str(obj.get("kind")) if obj.get("kind") in ("RayJob", RAY_SERVICE) else "RayCluster"
    pod_sets = _pod_sets(obj)
    ref, _ = pod_sets_priority_class_ref(obj, pod_sets)
    return owner_workload(obj, api_version=API_VERSION, kind=kind, group=GROUP, pod_sets=pod_sets,
                          priority_ref=ref, sliced=True)


def priority_class_path(obj: Mapping[str, Any]) -> str | None:
    """Where ``obj`` names the PriorityClass its Workload gets (``None``: the label or nothing)."""
    _, index = pod_sets_priority_class_ref(obj, _pod_sets(obj))
    return None if index < 0 else template_paths(obj)[index] + ".spec.priorityClassName"


def autoscales(obj: Mapping[str, Any]) -> bool:
    """A RayJob or RayService whose pod sets follow its live cluster (upstream's ``UpdatePodSets``): an
    elastic job with in-tree autoscaling on."""
    spec = _spec(obj).get(cluster_field(obj))
    return elastic(obj) and isinstance(spec, Mapping) and spec.get("enableInTreeAutoscaling") is True


def with_live_counts(pod_sets: list[dict[str, Any]], cluster: Mapping[str, Any], owner: str) -> list[dict[str, Any]]:
    """``UpdatePodSets``: each worker pod set counts what the live cluster's group asks for now (replicas
    times numOfHosts above 1; a group without replicas keeps the owner's count). A cluster group the
    owner's spec does not have is an error, as upstream's."""
    by_name = {p["name"]: p for p in pod_sets}
    for group in _spec(cluster).get("workerGroupSpecs") or []:
        name = str(group.get("groupName") or "").lower()
        pod_set = by_name.get(name)
        if pod_set is None:
            cluster_name = (cluster.get("metadata") or {}).get("name")
            raise JobConversionError("spec.rayClusterSpec.workerGroupSpecs", (
                f"PodSet name mismatch: RayCluster {cluster_name} has worker group {group.get('groupName')} which "
                f"is not found in Ray object {owner} spec"))
        replicas = group.get("replicas")
        if replicas is None:
            continue
        hosts = group.get("numOfHosts") or 1
        pod_set["count"] = replicas * hosts if hosts > 1 else replicas
    return pod_sets


def slicing_annotations(pod_sets: list[dict[str, Any]], cluster: Mapping[str, Any] | None) -> dict[str, str]:
    """``GetWorkloadslicingRayClusterCustomAnnotations``: the pod-set counts as JSON and the live cluster's
    generation ("" while there is none), written on the elastic RayJob or RayService."""
    generation = "" if cluster is None else str((cluster.get("metadata") or {}).get("generation") or "")
    sizes = json.dumps([{"name": p["name"], "count": p["count"]} for p in pod_sets], separators=(",", ":"))
    return {PODSET_SIZES_ANNOTATION: sizes, CLUSTER_GENERATION_ANNOTATION: generation}


def slice_generation(obj: Mapping[str, Any]) -> str:
    """``GetWorkloadNameExtraPart``: the object's generation, then ``_`` and its live cluster's as recorded
    in the annotation when there is one (so a slice for a scaled cluster gets a new name)."""
    meta = obj.get("metadata") or {}
    extra = str(meta.get("generation") or 1)
    recorded = (meta.get("annotations") or {}).get(CLUSTER_GENERATION_ANNOTATION)
    return f"{extra}_{recorded}" if recorded else extra


def workloads(obj: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(name, Workload)`` for the simulator: one, named as the object."""
    return [((obj.get("metadata") or {}).get("name", ""), workload_from_ray(obj))]
