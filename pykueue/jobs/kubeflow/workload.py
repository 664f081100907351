"""A Kubeflow job's Workload, as upstream's shared ``kubeflowjob.KubeflowJob`` builds it
(``pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go``; the MPIJob's
``pkg/controller/jobs/mpijob`` is the same over the MPI operator's types): one Workload named
``<kind>-NAME-<hash>`` (``GetWorkloadNameForOwnerWithGVK``).

Pod sets (``PodSets``): one per replica type the object has, in the kind's ``OrderedReplicaTypes`` (a
type the kind does not order is not Kueue's to count), named as the type lower-cased, with its
template and a count of its ``replicas`` (default 1). A template's topology annotations give a
topology request whose pods are indexed by the operator's replica-index label.

Priority (``PriorityClass``): the ``kueue.x-k8s.io/priority-class`` label (a WorkloadPriorityClass),
else ``spec.runPolicy.schedulingPolicy.priorityClass``, else the first template in pod-set order
naming a ``priorityClassName``.

What cannot become a Workload is refused with its field path: the operator's own rules
(``TrainingKind.operator_rules``), the replica counts, the labels every integration checks, and
topology annotations that make no valid request (``ValidateOnCreate``: ``ValidateTASPodSetRequest``
at ``spec.<replicaSpecs>[<Type>].template.metadata``, sorted by field as upstream sorts them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import (
    WORKLOAD_PRIORITY_CLASS_LABEL,
    Manifest,
    labels_of,
    owner_label_errors,
    owner_workload,
    pod_set_template,
    topology_request,
)
from pykueue.jobs.kubeflow.kind import REPLICA_INDEX_LABEL, Errors, TrainingKind

SCHEDULING_PRIORITY_PATH = "spec.runPolicy.schedulingPolicy.priorityClass"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def run_policy(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    policy = _spec(obj).get("runPolicy")
    return policy if isinstance(policy, Mapping) else {}


def suspended(obj: Mapping[str, Any]) -> bool:
    """``IsSuspended``: ``spec.runPolicy.suspend`` is true."""
    return run_policy(obj).get("suspend") is True


def replica_specs(kind: TrainingKind, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    specs = _spec(obj).get(kind.replica_specs)
    return specs if isinstance(specs, Mapping) else {}


def replica_types(kind: TrainingKind, obj: Mapping[str, Any]) -> list[str]:
    """``OrderedReplicaTypes``: the kind's ordered types the object has."""
    specs = replica_specs(kind, obj)
    return [t for t in kind.ordered if isinstance(specs.get(t), Mapping)]


def replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def _template(kind: TrainingKind, obj: Mapping[str, Any], replica_type: str) -> Mapping[str, Any]:
    template = replica_specs(kind, obj)[replica_type].get("template")
    return template if isinstance(template, Mapping) else {}


def _template_path(kind: TrainingKind, replica_type: str) -> str:
    return f"{kind.specs_path}[{replica_type}].template"


def pod_sets(kind: TrainingKind, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``PodSets``: one per ordered replica type, named as it lower-cased, count its replicas."""
    out = []
    specs = replica_specs(kind, obj)
    for replica_type in replica_types(kind, obj):
        template = _template(kind, obj, replica_type)
        pod_set: dict[str, Any] = {"name": replica_type.lower(), "count": replicas(specs[replica_type]),
                                   "template": pod_set_template(template)}
        topology = topology_request(template)
        if topology is not None:
            topology["podIndexLabel"] = REPLICA_INDEX_LABEL
            offset = kind.pod_index_offset(obj, replica_type)
            if offset is not None:
                topology["podIndexOffset"] = offset
            pod_set["topologyRequest"] = topology
        out.append(pod_set)
    return out


def template_paths(kind: TrainingKind, obj: Mapping[str, Any]) -> list[str]:
    """The object's field path of each pod set's template, in pod set order."""
    return [_template_path(kind, t) for t in replica_types(kind, obj)]


def _priority(kind: TrainingKind, obj: Mapping[str, Any]) -> tuple[dict[str, str] | None, str | None]:
    """``PriorityClass`` behind the label: the reference and where the object names it."""
    workload_class = labels_of(obj).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if workload_class:
        return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": workload_class}, None
    scheduling = run_policy(obj).get("schedulingPolicy")
    name = scheduling.get("priorityClass") if isinstance(scheduling, Mapping) else None
    path = SCHEDULING_PRIORITY_PATH
    if not name:
        path = None
        for replica_type in replica_types(kind, obj):
            name = (_template(kind, obj, replica_type).get("spec") or {}).get("priorityClassName")
            if name:
                path = _template_path(kind, replica_type) + ".spec.priorityClassName"
                break
    if not name:
        return None, None
    return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": str(name)}, path


def priority_class_path(kind: TrainingKind, obj: Mapping[str, Any]) -> str | None:
    """Where ``obj`` names the PriorityClass its Workload gets (``None``: the label or nothing)."""
    return _priority(kind, obj)[1]


def _shape_errors(kind: TrainingKind, obj: Mapping[str, Any]) -> Errors:
    """What the CRD's schema refuses that a Workload needs: each replica spec an object, ``replicas``
    a non-negative integer."""
    errors: Errors = []
    specs = _spec(obj).get(kind.replica_specs)
    if specs is not None and not isinstance(specs, Mapping):
        return [JobConversionError(kind.specs_path, "must be an object")]
    for replica_type, spec in (specs or {}).items():
        path = f"{kind.specs_path}[{replica_type}]"
        if not isinstance(spec, Mapping):
            errors.append(JobConversionError(path, "must be an object"))
            continue
        value = spec.get("replicas")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            errors.append(JobConversionError(f"{path}.replicas", f"Invalid value: {value!r}: must be an integer"))
        elif value is not None and value < 0:
            errors.append(JobConversionError(f"{path}.replicas",
                                             f"Invalid value: {value}: must be greater than or equal to 0"))
    return errors


def topology_errors(kind: TrainingKind, obj: Mapping[str, Any]) -> Errors:
    """``ValidateOnCreate``: each ordered type's topology annotations make a valid request, named at
    its template's own path; sorted by field."""
    errors: Errors = []
    for replica_type in replica_types(kind, obj):
        try:
            topology_request(_template(kind, obj, replica_type))
        except JobConversionError as exc:
            errors.append(JobConversionError(
                exc.path.replace("spec.template.", _template_path(kind, replica_type) + ".", 1), exc.message))
    return sorted(errors, key=lambda e: e.path)


def validate(kind: TrainingKind, obj: Mapping[str, Any]) -> Errors:
    """Every refusal of the API server (the schema, the operator) and of Kueue's webhook on create."""
    shape = _shape_errors(kind, obj)
    if shape:
        return shape
    return kind.operator_rules(obj) + owner_label_errors(obj) + topology_errors(kind, obj)


def workload(kind: TrainingKind, obj: Mapping[str, Any], *, label_keys_to_copy: tuple[str, ...] = ()) -> Manifest:
    """The v1beta2 Workload upstream's reconciler creates for ``obj``; raises the first refusal of
    ``validate`` for an object that cannot become one."""
    errors = validate(kind, obj)
    if errors:
        raise errors[0]
    ref, _ = _priority(kind, obj)
    group = kind.resource.group
    return owner_workload(obj, api_version=kind.resource.api_version, kind=kind.kind, group=group,
                          pod_sets=pod_sets(kind, obj), priority_ref=ref, label_keys_to_copy=label_keys_to_copy)


def workloads(kind: TrainingKind, obj: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(name, Workload)`` for the simulator: one, named as the object."""
    return [((obj.get("metadata") or {}).get("name", ""), workload(kind, obj))]
