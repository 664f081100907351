"""The JobSet integration's Workload, as upstream's (``pkg/controller/jobs/jobset``): a
``jobset.x-k8s.io/v1alpha2`` JobSet becomes one Workload named ``jobset-NAME-<hash>``.

Pod sets (``PodSets``): one per replicated job, in order, named as it, with its Job template's pod
template and a count of ``replicas`` (default 1) times the pods each of its Jobs runs at once
(``parallelism``, default 1, or ``completions`` when fewer). A template's topology annotations give
the pod set a topology request whose pods are indexed by the Job completion index and grouped by
JobSet's job index (one group per replica). JobSet admits no partial admission (no ``minCount``).
Priority: the ``kueue.x-k8s.io/priority-class`` label, else the first pod set's template with a
``priorityClassName``.

What the webhook refuses is the rules every integration shares (``generic_update``); the CRD's own
required fields (a replicated job's name and template) are checked here so that ``simulate`` reports
them with their field path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import (
    Manifest,
    owner_label_errors,
    owner_workload,
    pod_set_template,
    pod_sets_priority_class_ref,
    topology_request,
)

API_VERSION = "jobset.x-k8s.io/v1alpha2"
GROUP = "jobset.x-k8s.io"
KIND = "JobSet"
FRAMEWORK = "jobset.x-k8s.io/jobset"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"  # jobsetapi.JobIndexKey
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # jobsetapi.JobSetNameKey, on its Jobs and Pods

Errors = list[JobConversionError]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def replicated_jobs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    jobs = _spec(obj).get("replicatedJobs")
    return [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []


def _job_spec(replicated: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((replicated.get("template") or {}).get("spec")) or {}


def replicas(replicated: Mapping[str, Any]) -> int:
    value = replicated.get("replicas")
    return 1 if value is None else int(value)  # the CRD's default


def pods_per_replica(replicated: Mapping[str, Any]) -> int:
    """``podsCountPerReplica``: parallelism (default 1), or completions when fewer."""
    spec = _job_spec(replicated)
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


def pod_sets(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``PodSets``: one per replicated job (count replicas x pods per replica)."""
    out = []
    for replicated in replicated_jobs(obj):
        template = _job_spec(replicated).get("template") or {}
        pod_set: dict[str, Any] = {"name": replicated["name"], "count": replicas(replicated) * pods_per_replica(replicated),
                                   "template": pod_set_template(template)}
        topology = topology_request(template)
        if topology is not None:
            topology.update(subGroupIndexLabel=JOB_INDEX_LABEL, subGroupCount=replicas(replicated))
            pod_set["topologyRequest"] = topology
        out.append(pod_set)
    return out


def template_paths(obj: Mapping[str, Any]) -> list[str]:
    """The object's field path of each pod set's template, in pod set order."""
    return [f"spec.replicatedJobs[{i}].template.spec.template" for i in range(len(replicated_jobs(obj)))]


def _int_errors(value: object, path: str, minimum: int) -> Errors:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        return [JobConversionError(path, f"Invalid value: {value!r}: must be an integer")]
    if value < minimum:
        return [JobConversionError(path, f"Invalid value: {value}: must be greater than or equal to {minimum}")]
    return []


def validate(obj: Mapping[str, Any]) -> Errors:
    """The CRD's required fields a Workload needs, then Kueue's create rules."""
    errors: Errors = []
    jobs = _spec(obj).get("replicatedJobs")
    if not isinstance(jobs, list) or not jobs:
        errors.append(JobConversionError("spec.replicatedJobs", "Required value"))
        jobs = []
    seen: set[str] = set()
    for i, replicated in enumerate(jobs):
        path = f"spec.replicatedJobs[{i}]"
        if not isinstance(replicated, Mapping):
            errors.append(JobConversionError(path, "must be an object"))
            continue
        name = replicated.get("name")
        if not isinstance(name, str) or not name:
            errors.append(JobConversionError(f"{path}.name", "Required value"))
        elif name in seen:
            errors.append(JobConversionError(f"{path}.name", f'Duplicate value: "{name}"'))
        else:
            seen.add(name)
        errors += _int_errors(replicated.get("replicas"), f"{path}.replicas", 0)
        spec = _job_spec(replicated)
        for key in ("parallelism", "completions"):
            errors += _int_errors(spec.get(key), f"{path}.template.spec.{key}", 0)
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
        if not containers:
            errors.append(JobConversionError(f"{path}.template.spec.template.spec.containers", "Required value"))
    return errors + owner_label_errors(obj)


def workload_from_jobset(obj: Mapping[str, Any], *, label_keys_to_copy: tuple[str, ...] = ()) -> Manifest:
    """The v1beta2 Workload upstream's JobSet reconciler creates for ``obj``; raises the first
    ``JobConversionError`` of ``validate`` for an object that cannot become one."""
    errors = validate(obj)
    if errors:
        raise errors[0]
    sets = pod_sets(obj)
    ref, _ = pod_sets_priority_class_ref(obj, sets)
    return owner_workload(obj, api_version=API_VERSION, kind=KIND, group=GROUP, pod_sets=sets, priority_ref=ref,
                          label_keys_to_copy=label_keys_to_copy)


def priority_class_path(obj: Mapping[str, Any]) -> str | None:
    """Where ``obj`` names the PriorityClass its Workload gets (``None``: the label or nothing)."""
    _, index = pod_sets_priority_class_ref(obj, pod_sets(obj))
    return None if index < 0 else template_paths(obj)[index] + ".spec.priorityClassName"


def _suspended(obj: Mapping[str, Any]) -> bool:
    return _spec(obj).get("suspend") is True


def validate_create(obj: Mapping[str, Any]) -> Errors:
    """Upstream's ``vjobset`` on create: the rules every integration shares, then each replicated
    job's topology annotations (``ValidateTASPodSetRequest``: they must make a valid request)."""
    errors = generic_update.on_create(obj)
    for i, replicated in enumerate(replicated_jobs(obj)):
        template = _job_spec(replicated).get("template") or {}
        try:
            topology_request(template)
        except JobConversionError as exc:
            errors.append(JobConversionError(
                exc.path.replace("spec.template.", f"spec.replicatedJobs[{i}].template.spec.template.", 1), exc.message))
    return errors


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any],
                    default_queue_exists: Callable[[str], bool]) -> Errors:
    """``ValidateUpdate``: the shared update rules (suspended meaning ``spec.suspend``), then the new
    object's create rules."""
    return generic_update.on_update(old, new, suspended=_suspended(new), was_suspended=_suspended(old),
                                    default_queue_exists=default_queue_exists) + validate_create(new)


def workloads(obj: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(name, Workload)`` for the simulator: one, named as the JobSet."""
    return [((obj.get("metadata") or {}).get("name", ""), workload_from_jobset(obj))]
