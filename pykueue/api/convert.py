"""Validated v1beta2 models -> ``pykueue.engine.model`` objects, with upstream's defaults filled in.

This is the only place the boundary models meet the engine's dataclasses: after it, nothing downstream
sees pydantic. Quantities become canonical integers here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models import pod as pod_models
from pykueue.api.requests import pod_requests
from pykueue.engine import model
from pykueue.quantity import to_canonical

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"



class WorkloadBody(NamedTuple):
    """What the conversion reads of a Workload without status: its spec (one object for equal texts).
    The loader keeps this instead of the validated model between reading and building, so that a
    million generated Workloads do not each hold a model with its metadata until the end of loading."""

    spec: v2.WorkloadSpec
    status: None = None


def label_selector(selector: pod_models.LabelSelector | None) -> model.LabelSelector | None:
    if selector is None:
        return None
    return model.LabelSelector(
        match_labels=dict(selector.match_labels or {}),
        match_expressions=tuple(
            model.Requirement(req.key, req.operator, tuple(req.values or ()))
            for req in selector.match_expressions or []
        ),
    )


def toleration(tol: pod_models.Toleration) -> model.Toleration:
    return model.Toleration(
        key=tol.key or "", operator=tol.operator or "Equal", value=tol.value or "", effect=tol.effect or ""
    )


def resource_groups(groups: list[v2.ResourceGroup] | None) -> tuple[model.ResourceGroup, ...]:
    out = []
    for group in groups or []:
        flavors = []
        for flavor in group.flavors:
            resources = {}
            for quota in flavor.resources:
                resources[quota.name] = model.ResourceQuota(
                    nominal=to_canonical(quota.name, quota.nominal_quota),
                    borrowing_limit=None
                    if quota.borrowing_limit is None
                    else to_canonical(quota.name, quota.borrowing_limit),
                    lending_limit=None
                    if quota.lending_limit is None
                    else to_canonical(quota.name, quota.lending_limit),
                )
            flavors.append(model.FlavorQuotas(flavor.name, resources))
        out.append(model.ResourceGroup(tuple(group.covered_resources), tuple(flavors)))
    return tuple(out)


def fair_weight_milli(fs: v2.FairSharing | None) -> int:
    """``spec.fairSharing.weight`` in milli-units (default weight 1)."""
    if fs is None or fs.weight is None:
        return 1000
    return to_canonical("cpu", fs.weight)


def cluster_queue(cq: v2.ClusterQueue) -> model.ClusterQueue:
    spec = cq.spec
    preemption = spec.preemption or v2.ClusterQueuePreemption.model_construct()
    borrow = preemption.borrow_within_cohort
    fungibility = spec.flavor_fungibility
    strategy = spec.admission_checks_strategy
    return model.ClusterQueue(
        name=cq.metadata.name or "",
        cohort=spec.cohort_name or None,
        resource_groups=resource_groups(spec.resource_groups),
        namespace_selector=label_selector(spec.namespace_selector),
        queueing_strategy=spec.queueing_strategy or model.BEST_EFFORT_FIFO,
        preemption=model.PreemptionPolicy(
            within_cluster_queue=preemption.within_cluster_queue or model.NEVER,
            reclaim_within_cohort=preemption.reclaim_within_cohort or model.NEVER,
            borrow_within_cohort=(borrow.policy if borrow else None) or model.NEVER,
            max_priority_threshold=borrow.max_priority_threshold if borrow else None,
        ),
        flavor_fungibility=model.FlavorFungibility(
            when_can_borrow=(fungibility.when_can_borrow if fungibility else None) or model.MAY_STOP_SEARCH,
            when_can_preempt=(fungibility.when_can_preempt if fungibility else None) or model.TRY_NEXT_FLAVOR,
            preference=fungibility.preference if fungibility else None,
        ),
        stop_policy=spec.stop_policy or model.STOP_NONE,
        fair_weight_milli=fair_weight_milli(spec.fair_sharing),
        admission_checks=tuple(
            model.AdmissionCheckRule(rule.name, tuple(rule.on_flavors or ()))
            for rule in (strategy.admission_checks or [] if strategy else [])
        ),
    )


def cohort(obj: v2.Cohort) -> model.Cohort:
    return model.Cohort(
        name=obj.metadata.name or "",
        parent=obj.spec.parent_name or None,
        resource_groups=resource_groups(obj.spec.resource_groups),
        fair_weight_milli=fair_weight_milli(obj.spec.fair_sharing),
    )


def local_queue(obj: v2.LocalQueue, namespace: str) -> model.LocalQueue:
    return model.LocalQueue(
        namespace=namespace,
        name=obj.metadata.name or "",
        cluster_queue=obj.spec.cluster_queue or "",
        stop_policy=obj.spec.stop_policy or model.STOP_NONE,
    )


def resource_flavor(obj: v2.ResourceFlavor) -> model.ResourceFlavor:
    spec = obj.spec
    return model.ResourceFlavor(
        name=obj.metadata.name or "",
        node_labels=dict(spec.node_labels or {}),
        node_taints=tuple(model.Taint(t.key, t.value or "", t.effect) for t in spec.node_taints or []),
        tolerations=tuple(toleration(t) for t in spec.tolerations or []),
    )


def admission_check(obj: v2.AdmissionCheck) -> model.AdmissionCheck:
    return model.AdmissionCheck(name=obj.metadata.name or "", controller_name=obj.spec.controller_name)


def namespace(name: str, labels: dict[str, str] | None) -> model.Namespace:
    """A Namespace always carries its immutable ``kubernetes.io/metadata.name`` label."""
    merged = dict(labels or {})
    merged[NAMESPACE_NAME_LABEL] = name
    return model.Namespace(name=name, labels=merged)


def _required_affinity(spec: pod_models.PodSpec) -> tuple[model.NodeSelectorTerm, ...] | None:
    node_affinity = spec.affinity.node_affinity if spec.affinity else None
    required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    if required is None:
        return None
    return tuple(
        model.NodeSelectorTerm(
            tuple(
                model.Requirement(r.key, r.operator, tuple(r.values or ()))
                for r in term.match_expressions or []
            )
        )
        for term in required.node_selector_terms
    )


def pod_set(ps: v2.PodSet) -> model.PodSet:
    spec = ps.template.spec
    return model.PodSet(
        name=ps.name,
        count=ps.count,
        requests=pod_requests(spec),
        min_count=ps.min_count,
        node_selector=dict(spec.node_selector or {}),
        required_affinity=_required_affinity(spec),
        tolerations=tuple(toleration(t) for t in spec.tolerations or []),
    )


def admission(status: v2.WorkloadStatus | None, pod_sets: list[v2.PodSet]) -> model.Admission | None:
    if status is None or status.admission is None:
        return None
    counts = {ps.name: ps.count for ps in pod_sets}
    return model.Admission(
        cluster_queue=status.admission.cluster_queue,
        pod_set_assignments=tuple(
            model.PodSetAssignment(
                name=psa.name,
                count=psa.count if psa.count is not None else counts.get(psa.name, 0),
                flavors=dict(psa.flavors or {}),
            )
            for psa in status.admission.pod_set_assignments
        ),
    )


ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"  # workloadslicing.EnabledAnnotationKey
# On a scale-up slice: NAMESPACE/NAME of the slice it replaces (workloadslicing.WorkloadSliceReplacementFor)
SLICE_REPLACEMENT_FOR_ANNOTATION = "kueue.x-k8s.io/workload-slice-replacement-for"


def _slicing(wl: v2.Workload | WorkloadBody, given: Mapping[str, str] | None) -> tuple[bool, str | None]:
    """Whether the Workload is an elastic job's slice, and the slice it replaces (from ``given``, the
    object's annotations as the loader read them, else the model's metadata)."""
    meta = getattr(wl, "metadata", None)
    annotations = given if given is not None else (meta.annotations if meta is not None else None) or {}
    elastic = annotations.get(ELASTIC_JOB_ANNOTATION) == "true"
    return elastic, (annotations.get(SLICE_REPLACEMENT_FOR_ANNOTATION) or None) if elastic else None


def workload(
    wl: v2.Workload | WorkloadBody,
    *,
    pod_sets: tuple[model.PodSet, ...] | None = None,
    namespace: str,
    name: str,
    kind: str,
    priority: int,
    priority_class_name: str | None,
    priority_class_source: str | None,
    creation_time: float,
    annotations: Mapping[str, str] | None = None,
) -> model.Workload:
    spec = wl.spec
    status = wl.status
    elastic, replaces = _slicing(wl, annotations)
    return model.Workload(
        namespace=namespace,
        name=name,
        queue_name=spec.queue_name or "",
        pod_sets=pod_sets if pod_sets is not None else tuple(pod_set(ps) for ps in spec.pod_sets),
        priority=priority,
        priority_class_name=priority_class_name,
        priority_class_source=priority_class_source,
        active=spec.active if spec.active is not None else True,
        creation_time=creation_time,
        reclaimable_pods={rp.name: rp.count for rp in status.reclaimable_pods or []} if status else model.nothing(),
        admission=admission(status, spec.pod_sets),
        kind=kind,
        admitted=_admitted(status),
        check_states=_check_states(status),
        max_execution_seconds=spec.maximum_execution_time_seconds,
        accumulated_execution_seconds=_accumulated(status),
        elastic=elastic,
        replaces=replaces,
    )


def _accumulated(status: v2.WorkloadStatus | None) -> int:
    """``status.accumulatedPastExecutionTimeSeconds`` (v1beta1 spells it ``...Exexcution...``)."""
    if status is None:
        return 0
    value = status.accumulated_past_execution_time_seconds
    if value is None:
        value = status.accumulated_past_exexcution_time_seconds
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _conditions(status: v2.WorkloadStatus | None) -> dict[str, str]:
    """Condition type -> status ("True"/"False"), from a status read from the API server."""
    out: dict[str, str] = {}
    for c in (status.conditions if status is not None and isinstance(status.conditions, list) else []):
        if isinstance(c, dict) and isinstance(c.get("type"), str):
            out[c["type"]] = str(c.get("status"))
    return out


def _admitted(status: v2.WorkloadStatus | None) -> bool:
    """A status with an admission is Admitted unless its Admitted condition says otherwise (a
    simulation input gives only ``status.admission``, which means admitted)."""
    return _conditions(status).get("Admitted", "True") == "True"


def _check_states(status: v2.WorkloadStatus | None) -> dict[str, str]:
    checks = status.admission_checks if status is not None else None
    if not isinstance(checks, list):
        return model.nothing()
    return {c["name"]: str(c.get("state", "Pending")) for c in checks if isinstance(c, dict) and "name" in c}
