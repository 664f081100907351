"""The batch/v1 Job integration: Job -> Workload, admission injection, restore on eviction.

Pure functions over manifest dicts (the shapes ``kubectl get -o yaml`` prints). Nothing here
does I/O, resolves priorities or mutates its inputs, so the simulator and a future controller
can share it. Each rule follows upstream Kueue v0.18 (API ``kueue.x-k8s.io/v1beta2``):

- ``pkg/controller/jobs/job/job_controller.go``: ``PodSets``, ``podsCount``, ``minPodsCount``,
  ``RunWithPodSetsInfo``, ``RestorePodSetsInfo``, ``Stop``;
- ``pkg/controller/jobs/job/job_webhook.go`` and ``jobframework/validation.go``: what a Job
  must satisfy to be admitted by the API server at all;
- ``pkg/controller/jobframework``: ``ConstructWorkload``, ``NewWorkload``,
  ``GetWorkloadNameForOwnerWithGVK``, ``ExtractPriority``, ``SanitizePodSets``,
  ``getPodSetsInfoFromStatus``;
- ``pkg/podset/podset.go``: ``PodSetInfo``, ``FromAssignment``, ``FromPodSet``, ``Merge``,
  ``RestorePodSpec``.

A PodSetInfo is a plain dict::

    {"name": "main", "count": 3 or None, "annotations": {...}, "labels": {...},
     "nodeSelector": {...}, "tolerations": [...], "schedulingGates": [...]}

Admission and eviction are a pair, as upstream does it: record ``original_pod_set_info(job)``
(or ``pod_set_info_from_pod_set(workload["spec"]["podSets"][0])``) before admission,
``inject_admission`` the flavors' info on admission, and ``restore_job`` with the recorded info
on eviction.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Manifest = dict[str, Any]

# Keys Kueue reads on a Job or writes on a Workload.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_SECONDS_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
ORIGIN_UID_ANNOTATION = "kueue.x-k8s.io/multikueue-origin-uid"  # a MultiKueue worker's copy: the manager's UID
# upstream's constants.JobOwnerGVKAnnotation, JobOwnerNameAnnotation, ComponentWorkloadIndexAnnotation: a
# Workload of several made for one object (a LWS's groups) names that object and its index, so MultiKueue
# finds its adapter and its siblings
OWNER_GVK_ANNOTATION = "kueue.x-k8s.io/job-owner-gvk"
OWNER_NAME_ANNOTATION = "kueue.x-k8s.io/job-owner-name"
INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"
JOB_MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
SIMULATION_ANNOTATION_PREFIX = "pykueue.dev/"
POD_SET_LABEL = "kueue.x-k8s.io/podset"
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
DEFAULT_POD_SET_NAME = "main"
WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta2"

# Topology-aware scheduling requests, read from the pod template's annotations.
PODSET_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME_ANNOTATION = "kueue.x-k8s.io/podset-group-name"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"

# Labels the Job controller puts on the template itself; upstream keeps them out of the Workload
# and gives them back to the Job on restore.
MANAGED_LABELS = (
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
)

_JOB_KIND = "Job"
_JOB_GROUP = "batch"
_HASH_LENGTH = 5
ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"  # workloadslicing.EnabledAnnotationKey
_MAX_PREFIX_LENGTH = 253 - 1 - _HASH_LENGTH

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class JobConversionError(ValueError):
    """A Job that upstream's API server or webhook would reject, so no Workload exists for it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class PodSetInfoError(ValueError):
    """Upstream's permanent start errors (``podset.IsPermanent``): the Workload fails to start."""


class PodSetMergeError(PodSetInfoError):
    """An admission would set a template key that already holds a different value."""

    def __init__(self, field: str, key: str, existing: str, new: str) -> None:
        super().__init__(
            f"invalid admission check PodSetUpdate: conflict for {field}: "
            f"conflict for key={key}, value1={existing}, value2={new}"
        )
        self.field = field
        self.key = key
        self.existing = existing
        self.new = new


# --- Go parsing rules, so that what upstream accepts is exactly what we accept -------------


def go_atoi(value: str) -> int:
    """strconv.Atoi: optional sign and ASCII digits only; the error text is Go's."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        raise ValueError(f'strconv.Atoi: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{value}": value out of range')
    return number


def _to_int32(value: int) -> int:
    """Go's int32(v) conversion wraps around; upstream applies it to the parsed annotation."""
    return (value + 2**31) % 2**32 - 2**31


def _go_parse_bool(value: str) -> bool:
    """strconv.ParseBool."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def quote(value: Any) -> str:
    """How field.Invalid prints a value: strings quoted, numbers bare."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(_DNS1123_SUBDOMAIN_MESSAGE)
    return errors


def is_valid_label_value(value: str) -> bool:
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and _DNS1123_LABEL.fullmatch(value) is not None


# --- reading a Job -----------------------------------------------------------------------


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(obj).get("annotations") or {}


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
        return _to_int32(go_atoi(value))
    except ValueError:
        return None


def completions_follow_parallelism(job: Mapping[str, Any]) -> bool:
    """Whether partial admission also rewrites completions (Indexed Jobs that opt in)."""
    value = annotations_of(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    if value is None:
        return False
    try:
        return _go_parse_bool(value)
    except ValueError:
        return False


def queue_name(job: Mapping[str, Any]) -> str | None:
    """The LocalQueue name, from the label only.

    Upstream v0.18 dropped the fallback to the deprecated ``kueue.x-k8s.io/queue-name``
    annotation (``QueueNameForObject`` reads the label alone).
    """
    return labels_of(job).get(QUEUE_NAME_LABEL) or None


def is_managed(job: Mapping[str, Any]) -> bool:
    """Whether Kueue manages the Job (without ``manageJobsWithoutQueueName``)."""
    return queue_name(job) is not None


def workload_name_for_owner(kind: str, group: str, name: str, uid: str | None = None,
                            generation: int | str | None = None) -> str:
    """``GetWorkloadNameForOwnerWithGVK``: ``<kind>-<name>-<sha1[:5]>``, lower-cased and truncated.

    The hash is SHA-1 over ``<Kind>\\n<group>\\n<name>\\n<uid>`` (and ``\\n<generation>`` for an
    elastic job's slice: ``GetWorkloadNameForOwnerWithGVKAndGeneration``, a new name per scale). A
    manifest without a UID (every simulator input, ``uid=None``) hashes its name in the UID's place, so the name stays deterministic
    and differs from what any UID would give; ``uid=""`` is upstream's own "no UID" (a StatefulSet's
    group, named by its webhook before the object exists).
    """
    owner_uid = uid if uid is not None else name
    prefix = f"{kind}-{name}".lower()[:_MAX_PREFIX_LENGTH]
    parts = (kind, group, name, owner_uid) if generation is None else (kind, group, name, owner_uid, str(generation))
    digest = hashlib.sha1("\n".join(parts).encode()).hexdigest()
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def workload_name_for_job(name: str, uid: str | None = None) -> str:
    """``GetWorkloadNameForOwnerWithGVK`` for batch/v1 Job: ``job-<name>-<sha1[:5]>``."""
    return workload_name_for_owner(_JOB_KIND, _JOB_GROUP, name, uid or None)


# --- validation --------------------------------------------------------------------------


def owner_label_errors(obj: Mapping[str, Any]) -> list[JobConversionError]:
    """``ValidateJobOnCreate``'s label rules, shared by every integration: the queue-name and
    prebuilt-workload labels are resource names; ``max-exec-time-seconds`` is a positive int."""
    errors: list[JobConversionError] = []
    labels = labels_of(obj)
    for key in (QUEUE_NAME_LABEL, PREBUILT_WORKLOAD_LABEL):
        if key in labels:
            value = labels[key]
            problems = dns1123_subdomain_errors(str(value))
            if problems:
                errors.append(
                    JobConversionError(
                        f"metadata.labels[{key}]", f"Invalid value: {quote(value)}: {','.join(problems)}"
                    )
                )
    if MAX_EXEC_TIME_SECONDS_LABEL in labels:
        value = labels[MAX_EXEC_TIME_SECONDS_LABEL]
        path = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
        try:
            seconds = go_atoi(value)
        except ValueError as err:
            errors.append(JobConversionError(path, f"Invalid value: {quote(value)}: {err}"))
        else:
            if seconds <= 0:
                errors.append(JobConversionError(path, f"Invalid value: {seconds}: should be greater than 0"))
    return errors


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
        value = annotations[JOB_MIN_PARALLELISM_ANNOTATION]
        path = f"metadata.annotations[{JOB_MIN_PARALLELISM_ANNOTATION}]"
        try:
            parsed = go_atoi(value)
        except ValueError as err:
            errors.append(JobConversionError(path, f"Invalid value: {quote(value)}: {err}"))
        else:
            if _to_int32(parsed) >= count or parsed <= 0:
                errors.append(
                    JobConversionError(path, f"Invalid value: {parsed}: should be between 0 and {count - 1}")
                )

    if JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION in annotations:
        value = annotations[JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION]
        path = f"metadata.annotations[{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}]"
        try:
            enabled = _go_parse_bool(value)
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


# --- Job -> Workload ---------------------------------------------------------------------


def topology_request(template: Mapping[str, Any]) -> dict[str, Any] | None:
    """``PodSetTopologyRequest`` from the template's TAS annotations (TAS is on by default)."""
    annotations = annotations_of(template)
    request: dict[str, Any] = {}
    if PODSET_REQUIRED_TOPOLOGY_ANNOTATION in annotations:
        request["required"] = annotations[PODSET_REQUIRED_TOPOLOGY_ANNOTATION]
    elif PODSET_PREFERRED_TOPOLOGY_ANNOTATION in annotations:
        request["preferred"] = annotations[PODSET_PREFERRED_TOPOLOGY_ANNOTATION]
    elif PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION in annotations:
        value = annotations[PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION]
        try:
            request["unconstrained"] = _go_parse_bool(value)
        except ValueError as err:
            raise JobConversionError(
                f"spec.template.metadata.annotations[{PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION}]",
                f"Invalid value: {quote(value)}: {err}",
            ) from None
    elif not (
        PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION in annotations
        and PODSET_SLICE_SIZE_ANNOTATION in annotations
    ):
        return None
    if (
        PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION in annotations
        and PODSET_SLICE_SIZE_ANNOTATION in annotations
    ):
        value = annotations[PODSET_SLICE_SIZE_ANNOTATION]
        try:
            size = go_atoi(value)
            if not -(2**31) <= size < 2**31:
                raise ValueError(f'strconv.ParseInt: parsing "{value}": value out of range')
        except ValueError as err:
            raise JobConversionError(
                f"spec.template.metadata.annotations[{PODSET_SLICE_SIZE_ANNOTATION}]",
                f"Invalid value: {quote(value)}: {str(err).replace('Atoi', 'ParseInt')}",
            ) from None
        request["podSetSliceRequiredTopology"] = annotations[PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION]
        request["podSetSliceSize"] = size
    request["podIndexLabel"] = JOB_COMPLETION_INDEX_ANNOTATION
    if PODSET_GROUP_NAME_ANNOTATION in annotations and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = annotations[PODSET_GROUP_NAME_ANNOTATION]
    return request


def _dedupe_env(container: dict[str, Any]) -> None:
    """``SanitizePodSets``: one entry per env name, at its first position, with its last value."""
    env = container.get("env")
    if not env:
        return
    last: dict[str, Any] = {}
    for var in env:
        last[var.get("name")] = var
    container["env"] = list(last.values())


def pod_set_template(source: Mapping[str, Any]) -> dict[str, Any]:
    """A pod template as a Workload pod set stores it.

    Managed labels are dropped (``cleanManagedLabels``) and env vars de-duplicated; template
    metadata keeps only labels and annotations, the fields the Workload API allows there.
    """
    template: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    labels = {k: v for k, v in labels_of(source).items() if k not in MANAGED_LABELS}
    if labels:
        metadata["labels"] = labels
    if annotations_of(source):
        metadata["annotations"] = dict(annotations_of(source))
    if metadata:
        template["metadata"] = metadata
    spec = copy.deepcopy(dict(source.get("spec") or {}))
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            _dedupe_env(container)
    template["spec"] = spec
    return template


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


def priority_class_ref(job: Mapping[str, Any]) -> dict[str, str] | None:
    """``ExtractPriority``'s choice of class, unresolved.

    The ``kueue.x-k8s.io/priority-class`` label (a WorkloadPriorityClass) wins over the pod
    template's ``priorityClassName`` (a scheduling.k8s.io PriorityClass); neither gives None,
    which the resolver turns into the global default PriorityClass or 0.
    """
    workload_class = labels_of(job).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if workload_class:
        return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": workload_class}
    pod_class = (_template(job).get("spec") or {}).get("priorityClassName")
    if pod_class:
        return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pod_class}
    return None


def pod_sets_priority_class_ref(obj: Mapping[str, Any], pod_sets: list[dict[str, Any]]
                                ) -> tuple[dict[str, str] | None, int]:
    """``ExtractPriority`` for a kind of several pod sets: the workload priority-class label, else the
    first pod set's ``priorityClassName``; with the index of that pod set (-1 when none or the label)."""
    workload_class = labels_of(obj).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if workload_class:
        return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": workload_class}, -1
    for i, pod_set in enumerate(pod_sets):
        name = (pod_set["template"].get("spec") or {}).get("priorityClassName")
        if name:
            return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}, i
    return None, -1


def _max_execution_time_seconds(job: Mapping[str, Any]) -> int | None:
    """``MaximumExecutionTimeSecondsForObject``: a positive int32 or nothing."""
    value = labels_of(job).get(MAX_EXEC_TIME_SECONDS_LABEL)
    if value is None:
        return None
    try:
        seconds = go_atoi(value)
    except ValueError:
        return None
    return seconds if 0 < seconds < 2**31 else None


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


def owner_workload(
    obj: Mapping[str, Any],
    *,
    api_version: str,
    kind: str,
    group: str,
    pod_sets: list[dict[str, Any]],
    priority_ref: dict[str, str] | None,
    label_keys_to_copy: Iterable[str] = (),
    sliced: bool = False,
) -> Manifest:
    """``ConstructWorkload`` for any owner object (a Job, a RayCluster...): the Workload named after
    it, owned by it, with its queue, pod sets, priority class and execution limit; ``sliced``: the
    kind's elastic Workloads are slices, one per generation (ElasticJobsViaWorkloadSlices)."""
    meta = meta_of(obj)
    name = meta["name"]
    namespace = meta.get("namespace") or "default"
    uid = meta.get("uid") or None

    labels = {
        key: value
        for key in label_keys_to_copy
        if key not in (JOB_UID_LABEL, MULTIKUEUE_ORIGIN_LABEL)
        and (value := labels_of(obj).get(key)) is not None
    }
    if uid is not None and is_valid_label_value(uid):
        labels[JOB_UID_LABEL] = uid
    annotations = {
        key: value
        for key, value in annotations_of(obj).items()
        if key.startswith(PROVREQ_ANNOTATION_PREFIX) or key.startswith(SIMULATION_ANNOTATION_PREFIX)
    }

    generation = None
    if sliced and annotations_of(obj).get(ELASTIC_JOB_ANNOTATION) == "true":
        # a workload slice (ElasticJobsViaWorkloadSlices): named per generation, marked elastic
        annotations[ELASTIC_JOB_ANNOTATION] = "true"
        generation = meta.get("generation") or 1
    metadata: dict[str, Any] = {"name": workload_name_for_owner(kind, group, name, uid, generation),
                                "namespace": namespace}
    if meta.get("creationTimestamp") is not None:
        metadata["creationTimestamp"] = meta["creationTimestamp"]
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    metadata["finalizers"] = [RESOURCE_IN_USE_FINALIZER]
    owner: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name}
    if uid is not None:
        owner["uid"] = uid
    owner.update({"controller": True, "blockOwnerDeletion": True})
    metadata["ownerReferences"] = [owner]

    spec: dict[str, Any] = {}
    queue = queue_name(obj)
    if queue is not None:
        spec["queueName"] = queue
    spec["podSets"] = pod_sets
    if priority_ref is not None:
        spec["priorityClassRef"] = priority_ref
    spec["active"] = True
    max_seconds = _max_execution_time_seconds(obj)
    if max_seconds is not None:
        spec["maximumExecutionTimeSeconds"] = max_seconds
    return {"apiVersion": WORKLOAD_API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


# --- PodSetInfo --------------------------------------------------------------------------


def _empty_info(name: str, count: int | None) -> dict[str, Any]:
    return {
        "name": name,
        "count": count,
        "annotations": {},
        "labels": {},
        "nodeSelector": {},
        "tolerations": [],
        "schedulingGates": [],
    }


def pod_set_info_from_flavors(
    flavors: Sequence[Mapping[str, Any]], *, name: str = DEFAULT_POD_SET_NAME, count: int | None = None
) -> dict[str, Any]:
    """What an admission with these ResourceFlavors injects into the pod set ``name``.

    ``podset.FromAssignment`` plus the ``kueue.x-k8s.io/podset`` label the reconciler always
    adds: each flavor (once per name, in the given order) contributes its ``spec.nodeLabels``
    to the nodeSelector (a later flavor wins a shared key) and appends its ``spec.tolerations``.
    ``count`` is the assignment's pod count; None means the pod set's full count.
    """
    info = _empty_info(name, count)
    info["labels"][POD_SET_LABEL] = name
    seen: set[str] = set()
    for flavor in flavors:
        flavor_name = meta_of(flavor).get("name")
        if flavor_name in seen:
            continue
        seen.add(flavor_name)
        flavor_spec = flavor.get("spec") or {}
        info["nodeSelector"].update(flavor_spec.get("nodeLabels") or {})
        info["tolerations"].extend(copy.deepcopy(list(flavor_spec.get("tolerations") or [])))
    return info


def pod_set_info_from_pod_set(pod_set: Mapping[str, Any]) -> dict[str, Any]:
    """``podset.FromPodSet``: what a Workload pod set records of the Job before admission."""
    template = pod_set.get("template") or {}
    spec = template.get("spec") or {}
    info = _empty_info(pod_set.get("name", DEFAULT_POD_SET_NAME), pod_set.get("count"))
    info["annotations"] = dict(annotations_of(template))
    info["labels"] = dict(labels_of(template))
    info["nodeSelector"] = dict(spec.get("nodeSelector") or {})
    info["tolerations"] = copy.deepcopy(list(spec.get("tolerations") or []))
    info["schedulingGates"] = copy.deepcopy(list(spec.get("schedulingGates") or []))
    return info


def original_pod_set_info(job: Mapping[str, Any]) -> dict[str, Any]:
    """The info ``restore_job`` needs, taken from the Job before admission.

    Same value as ``pod_set_info_from_pod_set`` on the Workload's pod set, which is where
    upstream reads it on eviction.
    """
    return pod_set_info_from_pod_set(pod_sets_for_job(job)[0])


def _struct_key(item: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Go struct equality for tolerations and gates: an unset field equals its zero value."""
    return tuple(sorted((k, v) for k, v in item.items() if v not in (None, "")))


def _merge_map(field: str, target: dict[str, str], update: Mapping[str, str] | None) -> None:
    for key, value in (update or {}).items():
        if key in target and target[key] != value:
            raise PodSetMergeError(field, key, target[key], value)
    target.update(update or {})


def _append_missing(target: list[Any], update: Sequence[Mapping[str, Any]] | None) -> None:
    """Append what ``target`` lacks, as upstream's ``slices.Index == -1`` test does."""
    present = [_struct_key(item) for item in target]
    for item in update or []:
        if _struct_key(item) not in present:
            target.append(copy.deepcopy(item))
            present.append(_struct_key(item))


def merge_pod_set_info(info: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``PodSetInfo.Merge``: fold an admission check's podSetUpdate into an info.

    Maps must agree on shared keys (else ``PodSetMergeError``); tolerations and scheduling
    gates are appended without duplicates. Returns a new info.
    """
    merged = copy.deepcopy(dict(info))
    for field in ("annotations", "labels", "nodeSelector"):
        merged[field] = dict(merged.get(field) or {})
        _merge_map(field, merged[field], update.get(field))
    merged["tolerations"] = list(merged.get("tolerations") or [])
    _append_missing(merged["tolerations"], update.get("tolerations"))
    merged["schedulingGates"] = list(merged.get("schedulingGates") or [])
    _append_missing(merged["schedulingGates"], update.get("schedulingGates"))
    return merged


def _set_or_drop(obj: dict[str, Any], key: str, value: Any) -> None:
    """Kubernetes omits empty maps and lists, so an empty value means the key is absent."""
    if value:
        obj[key] = copy.deepcopy(value)
    else:
        obj.pop(key, None)


def _sync_parallelism(job: dict[str, Any], count: int) -> None:
    spec = job["spec"]
    spec["parallelism"] = count
    if completions_follow_parallelism(job):
        spec["completions"] = count


def merge_template(template: dict[str, Any], info: Mapping[str, Any], restore: bool) -> dict[str, Any]:
    """Upstream's ``podset.Merge`` (or ``RestorePodSpec``) on one pod template of any kind, by the Job's
    own rules: the template wrapped as a Job's, which carries no partial-admission annotation."""
    wrapped = {"spec": {"template": template}}
    done = restore_job(wrapped, info) if restore else inject_admission(wrapped, [info])
    return done["spec"]["template"]


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

    template = spec.setdefault("template", {})
    pod_spec = template.setdefault("spec", {})
    metadata = dict(template.get("metadata") or {})
    current = {
        "annotations": dict(metadata.get("annotations") or {}),
        "labels": dict(metadata.get("labels") or {}),
        "nodeSelector": dict(pod_spec.get("nodeSelector") or {}),
        "tolerations": list(pod_spec.get("tolerations") or []),
        "schedulingGates": list(pod_spec.get("schedulingGates") or []),
    }
    merged = merge_pod_set_info(current, info)
    _set_or_drop(metadata, "annotations", merged["annotations"])
    _set_or_drop(metadata, "labels", merged["labels"])
    if metadata:
        template["metadata"] = metadata
    _set_or_drop(pod_spec, "nodeSelector", merged["nodeSelector"])
    _set_or_drop(pod_spec, "tolerations", merged["tolerations"])
    _set_or_drop(pod_spec, "schedulingGates", merged["schedulingGates"])
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

    template = spec.setdefault("template", {})
    pod_spec = template.setdefault("spec", {})
    metadata = dict(template.get("metadata") or {})
    labels = dict(original_info.get("labels") or {})
    for key in MANAGED_LABELS:
        if key in (metadata.get("labels") or {}):
            labels[key] = metadata["labels"][key]
    _set_or_drop(metadata, "annotations", original_info.get("annotations"))
    _set_or_drop(metadata, "labels", labels)
    if metadata:
        template["metadata"] = metadata
    else:
        template.pop("metadata", None)
    _set_or_drop(pod_spec, "nodeSelector", original_info.get("nodeSelector"))
    _set_or_drop(pod_spec, "tolerations", original_info.get("tolerations"))
    _set_or_drop(pod_spec, "schedulingGates", original_info.get("schedulingGates"))
    return new
