"""The Workload an owner object becomes, as every kind builds it: the keys Kueue reads on a job or writes
on its Workload (labels, annotations, the finalizer), the owner's queue name, whether Kueue manages it,
the Workload's name (``workload_name_for_owner``), its label rules on create (``owner_label_errors``),
priority class, pod set templates (``pod_set_template``, upstream's SanitizePodSets) and topology
requests, and the Workload itself (``owner_workload``, upstream's ConstructWorkload). Pure functions over
manifest dicts (the shapes ``kubectl get -o yaml`` prints); nothing here does I/O, resolves priorities or
mutates its inputs.

Upstream's counterparts: ``pkg/controller/jobframework`` (``ConstructWorkload``, ``NewWorkload``,
``GetWorkloadNameForOwnerWithGVK``, ``ExtractPriority``, ``SanitizePodSets``, ``QueueNameForObject``,
``validation.go``'s label rules, ``tas.go``'s ``PodSetTopologyRequest``) and ``pkg/controller/constants``.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.jobs.framework.validation import (
    JobConversionError,
    atoi_field,
    dns1123_subdomain_errors,
    go_atoi,
    go_parse_bool,
    is_valid_label_value,
    quote,
)

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
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
SIMULATION_ANNOTATION_PREFIX = "pykueue.dev/"
POD_SET_LABEL = "kueue.x-k8s.io/podset"
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
DEFAULT_POD_SET_NAME = "main"
WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta2"
ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"  # workloadslicing.EnabledAnnotationKey

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

_HASH_LENGTH = 5
_MAX_PREFIX_LENGTH = 253 - 1 - _HASH_LENGTH


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(obj).get("annotations") or {}


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
        path = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
        seconds = atoi_field(path, labels[MAX_EXEC_TIME_SECONDS_LABEL], errors)
        if seconds is not None and seconds <= 0:
            errors.append(JobConversionError(path, f"Invalid value: {seconds}: should be greater than 0"))
    return errors


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
            request["unconstrained"] = go_parse_bool(value)
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


def priority_class_ref(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """``ExtractPriority``'s choice of class, unresolved.

    For an object whose ``spec.template`` is its pods' (a Job, a StatefulSet): the
    ``kueue.x-k8s.io/priority-class`` label (a WorkloadPriorityClass) wins over the pod template's
    ``priorityClassName`` (a scheduling.k8s.io PriorityClass); neither gives None, which the
    resolver turns into the global default PriorityClass or 0.
    """
    workload_class = labels_of(obj).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if workload_class:
        return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": workload_class}
    template = (obj.get("spec") or {}).get("template") or {}
    pod_class = (template.get("spec") or {}).get("priorityClassName")
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
