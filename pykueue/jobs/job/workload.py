"""The batch/v1 Job's own Workload rules: Job -> Workload, admission injection, restore on eviction.

Pure functions over manifest dicts (the shapes ``kubectl get -o yaml`` prints). Nothing here
does I/O, resolves priorities or mutates its inputs, so the simulator and the controller share
it (the pod integration builds a Pod's Workload as a one-pod Job's). Each rule follows upstream
Kueue v0.18 (API ``kueue.x-k8s.io/v1beta2``):

- ``pkg/controller/jobs/job/job_controller.go``: ``PodSets``, ``podsCount``, ``minPodsCount``,
  ``RunWithPodSetsInfo``, ``RestorePodSetsInfo``, ``Stop``;
- ``pkg/controller/jobs/job/job_webhook.go``: what a Job must satisfy to be admitted by the API
  server at all (with the job framework's label rules, ``framework.workload.owner_label_errors``).

What every kind shares (the Workload an owner becomes, PodSetInfo) is the job framework's
(``pykueue.jobs.framework.workload``, ``pykueue.jobs.framework.podset``).

Admission and eviction are a pair, as upstream does it: record ``original_pod_set_info(job)``
(or ``pod_set_info_from_pod_set(workload["spec"]["podSets"][0])``) before admission,
``inject_admission`` the flavors' info on admission, and ``restore_job`` with the recorded info
on eviction.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pykueue.jobs.framework.podset import (
    PodSetInfoError,
    inject_into_template,
    pod_set_info_from_pod_set,
    restore_template,
)
from pykueue.jobs.framework.validation import (
    JobConversionError,
    atoi_field,
    go_atoi,
    go_parse_bool,
    quote,
    to_int32,
)
from pykueue.jobs.framework.workload import (
    DEFAULT_POD_SET_NAME,
    Manifest,
    annotations_of,
    meta_of,
    owner_label_errors,
    owner_workload,
    pod_set_template,
    priority_class_ref,
    topology_request,
    workload_name_for_owner,
)

JOB_MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"

_JOB_KIND = "Job"
_JOB_GROUP = "batch"


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def _template(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return _spec(job).get("template") or {}


def _spec_int(job: Mapping[str, Any], field: str) -> int | None:
    """An optional non-negative integer from ``spec``, as the API server validates it."""
    value = _spec(job).get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobConversionError(f"spec.{field}", f"Invalid value: {quote(value)}: must be an integer")
    if value < 0:
        raise JobConversionError(
            f"spec.{field}", f"Invalid value: {value}: must be greater than or equal to 0"
        )
    return value


def _parallelism(job: Mapping[str, Any]) -> int:
    """spec.parallelism after Kubernetes defaulting (1 when unset)."""
    value = _spec_int(job, "parallelism")
    return 1 if value is None else value


def pods_count(job: Mapping[str, Any]) -> int:
    """The pod set count: parallelism, capped by completions when completions is smaller.

    Upstream's ``podsCount``. It does not subtract ``status.succeeded``: a fresh Job has none,
    and finished pods are released later through ``status.reclaimablePods``, not via the count.
    """
    count = _parallelism(job)
    completions = _spec_int(job, "completions")
    if completions is not None and completions < count:
        count = completions
    return count


def min_pods_count(job: Mapping[str, Any]) -> int | None:
    """``minCount`` for partial admission, or None when the Job does not ask for it.

    Upstream's ``minPodsCount``: any annotation Atoi can parse counts (range is the webhook's
    business, see ``validate_job``).
    """
    value = annotations_of(job).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if value is None:
        return None
    try:
        return to_int32(go_atoi(value))
    except ValueError:
        return None


def completions_follow_parallelism(job: Mapping[str, Any]) -> bool:
    """Whether partial admission also rewrites completions (Indexed Jobs that opt in)."""
    value = annotations_of(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    if value is None:
        return False
    try:
        return go_parse_bool(value)
    except ValueError:
        return False


def workload_name_for_job(name: str, uid: str | None = None) -> str:
    """``GetWorkloadNameForOwnerWithGVK`` for batch/v1 Job: ``job-<name>-<sha1[:5]>``."""
    return workload_name_for_owner(_JOB_KIND, _JOB_GROUP, name, uid or None)


def validate_job(job: Mapping[str, Any], *, min_parallelism: bool = True) -> list[JobConversionError]:
    """Every reason upstream's API server or Job webhook would refuse this Job on create (on an
    update, ``min_parallelism`` is False unless that annotation changed, as upstream checks it).

    The checks are the webhook's ``validateCreate``: queue-name and prebuilt-workload labels as
    resource names, ``max-exec-time-seconds``, ``job-min-parallelism`` (strictly between 0 and
    the pod count) and ``job-completions-equal-parallelism``; plus the few API-server rules this
    module depends on (a name, integer parallelism and completions).
    """
    errors: list[JobConversionError] = []
    if not meta_of(job).get("name"):
        errors.append(JobConversionError("metadata.name", "Required value: name is required"))
    try:
        count = pods_count(job)
    except JobConversionError as err:
        errors.append(err)
        return errors

    errors += owner_label_errors(job)

    annotations = annotations_of(job)
    if min_parallelism and JOB_MIN_PARALLELISM_ANNOTATION in annotations:
        path = f"metadata.annotations[{JOB_MIN_PARALLELISM_ANNOTATION}]"
        parsed = atoi_field(path, annotations[JOB_MIN_PARALLELISM_ANNOTATION], errors)
        if parsed is not None and (to_int32(parsed) >= count or parsed <= 0):
            errors.append(
                JobConversionError(path, f"Invalid value: {parsed}: should be between 0 and {count - 1}")
            )

    if JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION in annotations:
        value = annotations[JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION]
        path = f"metadata.annotations[{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}]"
        try:
            enabled = go_parse_bool(value)
        except ValueError as err:
            enabled = False
            errors.append(JobConversionError(path, f"Invalid value: {quote(value)}: {err}"))
        if enabled:
            if _spec(job).get("completionMode", "NonIndexed") == "NonIndexed":
                errors.append(
                    JobConversionError(
                        path, f"Invalid value: {quote(value)}: should not be enabled for NonIndexed jobs"
                    )
                )
            completions = _spec_int(job, "completions")
            if _parallelism(job) != (1 if completions is None else completions):
                errors.append(
                    JobConversionError(
                        "spec.completions",
                        f"Invalid value: {quote(completions)}: should be equal to parallelism when "
                        f"{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} is annotation is true",
                    )
                )
    try:
        topology_request(_template(job))
    except JobConversionError as err:
        errors.append(err)
    return errors


def _pod_set_template(job: Mapping[str, Any]) -> dict[str, Any]:
    """The Job's pod template as the Workload stores it."""
    return pod_set_template(_template(job))


def pod_sets_for_job(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``Job.PodSets``: the single pod set ``main``."""
    pod_set: dict[str, Any] = {"name": DEFAULT_POD_SET_NAME, "count": pods_count(job)}
    minimum = min_pods_count(job)
    if minimum is not None:
        pod_set["minCount"] = minimum
    pod_set["template"] = _pod_set_template(job)
    topology = topology_request(_template(job))
    if topology is not None:
        pod_set["topologyRequest"] = topology
    return [pod_set]


def workload_from_job(job: Mapping[str, Any], *, label_keys_to_copy: Iterable[str] = ()) -> Manifest:
    """The v1beta2 Workload upstream's Job reconciler creates for ``job``.

    Raises ``JobConversionError`` (the first of ``validate_job``) for a Job the webhook would
    have refused. ``spec.priority`` is left out: resolving the class is another layer's job.
    ``label_keys_to_copy`` is the Configuration's ``integrations.labelKeysToCopy``. Besides what
    upstream propagates (ProvisioningRequest ``provreq.kueue.x-k8s.io/*`` annotations), every
    ``pykueue.dev/*`` annotation and ``metadata.creationTimestamp`` are kept for the simulator.
    """
    errors = validate_job(job)
    if errors:
        raise errors[0]
    return owner_workload(job, api_version="batch/v1", kind=_JOB_KIND, group=_JOB_GROUP,
                          pod_sets=pod_sets_for_job(job), priority_ref=priority_class_ref(job),
                          label_keys_to_copy=label_keys_to_copy, sliced=True)


def original_pod_set_info(job: Mapping[str, Any]) -> dict[str, Any]:
    """The info ``restore_job`` needs, taken from the Job before admission.

    Same value as ``pod_set_info_from_pod_set`` on the Workload's pod set, which is where
    upstream reads it on eviction.
    """
    return pod_set_info_from_pod_set(pod_sets_for_job(job)[0])


def _sync_parallelism(job: dict[str, Any], count: int) -> None:
    spec = job["spec"]
    spec["parallelism"] = count
    if completions_follow_parallelism(job):
        spec["completions"] = count


def inject_admission(
    job: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], count: int | None = None
) -> Manifest:
    """``Job.RunWithPodSetsInfo``: the Job as Kueue starts it after admission. Returns a new dict.

    ``spec.suspend`` becomes false. With partial admission (a parseable min-parallelism
    annotation) ``spec.parallelism`` becomes the admitted count: ``count`` if given, else the
    info's count, else the full pod count; ``job-completions-equal-parallelism`` moves
    completions along. Without it parallelism is left alone. The info's labels, annotations and
    nodeSelector are merged into the template (a key already set to another value raises
    ``PodSetMergeError``); tolerations and scheduling gates are appended without duplicates.
    Exactly one info is expected (``PodSetInfoError`` otherwise), as upstream.
    """
    new = copy.deepcopy(dict(job))
    spec = new.setdefault("spec", {})
    spec["suspend"] = False
    if len(infos) != 1:
        raise PodSetInfoError(f"invalid podset infos: expecting 1 podset, got {len(infos)}")
    info = infos[0]
    if min_pods_count(new) is not None:
        admitted = count if count is not None else info.get("count")
        _sync_parallelism(new, admitted if admitted is not None else pods_count(job))

    inject_into_template(spec.setdefault("template", {}), info)
    return new


def restore_job(job: Mapping[str, Any], original_info: Mapping[str, Any]) -> Manifest:
    """``Job.Stop`` on eviction: suspended again, template and parallelism as recorded.

    ``original_info`` is ``original_pod_set_info`` of the Job before admission (or
    ``pod_set_info_from_pod_set`` of the Workload's pod set). The template's labels,
    annotations, nodeSelector, tolerations and scheduling gates become the info's, except that
    the Job controller's own labels (``job-name``...) stay. With partial admission parallelism
    goes back to the info's count (upstream's rule: that is min(parallelism, completions)).
    ``status.startTime`` is cleared so the next start may change scheduling directives.
    Returns a new dict.
    """
    new = copy.deepcopy(dict(job))
    spec = new.setdefault("spec", {})
    spec["suspend"] = True
    status = new.get("status")
    if isinstance(status, dict):
        status.pop("startTime", None)

    count = original_info.get("count")
    if min_pods_count(new) is not None and count is not None and spec.get("parallelism", 0) != count:
        _sync_parallelism(new, count)

    restore_template(spec.setdefault("template", {}), original_info)
    return new
