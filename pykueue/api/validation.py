"""Kueue's validation rules: the CRD markers (limits, patterns, CEL rules) and the webhooks' checks.

Every function takes a parsed (and, for v1beta1, normalised) object and returns its problems as
``(field path, message)``. The rules follow ``pkg/webhooks/*_webhook.go`` and the ``XValidation``
markers of ``apis/kueue/v1beta2`` as of Kueue v0.18; the messages say the same thing in our words.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pydantic import BaseModel

from pykueue.api import names
from pykueue.api.convert import ELASTIC_JOB_ANNOTATION
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.core import PriorityClass
from pykueue.api.models.pod import LabelSelector, PodSpec, Taint, Toleration
from pykueue.quantity import format_decimal, to_canonical

Errors = list[tuple[str, str]]

MAX_RESOURCE_GROUPS = 16
MAX_COVERED_RESOURCES = 64  # per resource group
MAX_FLAVORS = 64  # per resource group
MAX_FLAVOR_RESOURCES = 64
MAX_TOTAL_FLAVORS = 256
MAX_TOTAL_COVERED_RESOURCES = 256
MAX_FLAVOR_RESOURCE_PAIRS = 512  # per resource group
MAX_POD_SETS = 10  # raised from 8 in v0.18
MAX_ADMISSION_CHECKS = 64
MAX_NODE_LABELS = 8
MAX_NODE_TAINTS = 8
MAX_FLAVOR_TOLERATIONS = 8
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
PODS = "pods"
NEGATIVE = "must be greater than or equal to 0"
RESERVED_PODS = "the key is reserved for internal kueue use"


def _supported(value: object, allowed: tuple[str, ...] | list[str]) -> str:
    listed = ", ".join(f'"{a}"' for a in allowed)
    return f'Unsupported value: "{value}": supported values: {listed}'


def _too_many(count: int, limit: int) -> str:
    return f"Too many: {count}: must have at most {limit} items"


def _quantity_text(value: Fraction) -> str:
    return format_decimal(value)


# --- names ------------------------------------------------------------------------------------------


def object_name(name: str | None, *, dns_label: bool = False) -> Errors:
    """``metadata.name``: required; a DNS-1123 subdomain (a DNS-1123 label for Namespaces)."""
    if not name:
        return [("metadata.name", "Required value: name is required")]
    check = names.dns1123_label if dns_label else names.dns1123_subdomain
    return [("metadata.name", f'Invalid value: "{name}": {msg}') for msg in check(name)]


def namespace_name(namespace: str) -> Errors:
    return [
        ("metadata.namespace", f'Invalid value: "{namespace}": {msg}')
        for msg in names.dns1123_label(namespace)
    ]


def reference(value: str | None, path: str, *, label: bool = False) -> Errors:
    """A reference to another object by name (cohort, cluster queue, local queue, flavor...)."""
    if value is None:
        return []
    if value == "":
        return [(path, "Invalid value: must not be empty")]
    check = names.dns1123_label if label else names.dns1123_subdomain
    return [(path, f'Invalid value: "{value}": {msg}') for msg in check(value)]


TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB


def annotations_size(values: dict[str, str] | None, path: str = "metadata.annotations") -> Errors:
    """``ValidateAnnotationsSize``: keys and values together at most 256 KiB, counted in UTF-8 bytes."""
    if not values:
        return []
    chars = sum(len(k) + len(v) for k, v in values.items())
    if chars * 4 <= TOTAL_ANNOTATION_SIZE_LIMIT:  # cannot be over even if every character took 4 bytes
        return []
    size = sum(len(k.encode()) + len(v.encode()) for k, v in values.items())
    if size <= TOTAL_ANNOTATION_SIZE_LIMIT:
        return []
    return [(path, f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")]


def job_pod_template(spec: v2.WorkloadSpec) -> Errors:
    """What the API server's pod-spec validation adds for a Job (a Workload's CRD schema only asks
    that ``containers`` be present): at least one container. Paths are the built Workload's."""
    return [
        (f"spec.podSets[{i}].template.spec.containers", "Required value")
        for i, pod_set in enumerate(spec.pod_sets)
        if not pod_set.template.spec.containers
    ]


def labels(values: dict[str, str] | None, path: str) -> Errors:
    errors: Errors = []
    for key, value in (values or {}).items():
        errors += [(f"{path}[{key}]", f'Invalid value: "{key}": {m}') for m in names.qualified_name(key)]
        errors += [(f"{path}[{key}]", f'Invalid value: "{value}": {m}') for m in names.label_value(value)]
    return errors


def label_selector(selector: LabelSelector | None, path: str) -> Errors:
    """``metav1.ValidateLabelSelector``: valid labels, known operators, values only where they belong."""
    if selector is None:
        return []
    errors = labels(selector.match_labels, f"{path}.matchLabels")
    for i, req in enumerate(selector.match_expressions or []):
        rpath = f"{path}.matchExpressions[{i}]"
        errors += [
            (f"{rpath}.key", f'Invalid value: "{req.key}": {m}') for m in names.qualified_name(req.key)
        ]
        if req.operator in ("In", "NotIn"):
            if not req.values:
                errors.append(
                    (
                        f"{rpath}.values",
                        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                errors.append(
                    (
                        f"{rpath}.values",
                        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append((f"{rpath}.operator", _supported(req.operator, SELECTOR_OPERATORS)))
    return errors


# --- taints and tolerations ---------------------------------------------------------------------------


def tolerations(items: list[Toleration] | None, path: str, *, limit: int | None = None) -> Errors:
    """The ResourceFlavor CRD's CEL rules on tolerations (also a sanity check for pod templates)."""
    items = items or []
    errors: Errors = []
    if limit is not None and len(items) > limit:
        errors.append((path, _too_many(len(items), limit)))
    for i, tol in enumerate(items):
        tpath = f"{path}[{i}]"
        if tol.key:
            errors += [
                (f"{tpath}.key", f'Invalid value: "{tol.key}": {m}') for m in names.qualified_name(tol.key)
            ]
        elif tol.operator != "Exists":
            errors.append(
                (
                    f"{tpath}.operator",
                    "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
                )
            )
        if tol.operator and tol.operator not in TOLERATION_OPERATORS:
            errors.append((f"{tpath}.operator", _supported(tol.operator, TOLERATION_OPERATORS)))
        if tol.operator == "Exists" and tol.value:
            errors.append((f"{tpath}.value", "a value must be empty when 'operator' is 'Exists'"))
        if tol.effect and tol.effect not in TAINT_EFFECTS:
            errors.append((f"{tpath}.effect", _supported(tol.effect, TAINT_EFFECTS)))
        if tol.toleration_seconds is not None and tol.effect != "NoExecute":
            errors.append((f"{tpath}.effect", "effect must be 'NoExecute' when 'tolerationSeconds' is set"))
    return errors


def node_taints(items: list[Taint] | None, path: str) -> Errors:
    items = items or []
    errors: Errors = []
    if len(items) > MAX_NODE_TAINTS:
        errors.append((path, _too_many(len(items), MAX_NODE_TAINTS)))
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(items):
        tpath = f"{path}[{i}]"
        errors += [
            (f"{tpath}.key", f'Invalid value: "{taint.key}": {m}') for m in names.qualified_name(taint.key)
        ]
        errors += [
            (f"{tpath}.value", f'Invalid value: "{taint.value}": {m}')
            for m in names.label_value(taint.value or "")
        ]
        if taint.effect not in TAINT_EFFECTS:
            errors.append((f"{tpath}.effect", _supported(taint.effect, TAINT_EFFECTS)))
        if (taint.key, taint.effect) in seen:
            errors.append((tpath, "Duplicate value: taints must be unique by key and effect pair"))
        seen.add((taint.key, taint.effect))
    return errors


# --- quotas (ClusterQueue and Cohort) ------------------------------------------------------------------


def resource_groups(
    groups: list[v2.ResourceGroup] | None,
    *,
    has_parent: bool,
    is_cohort: bool,
    path: str = "spec.resourceGroups",
) -> Errors:
    """Shape and limits of ``resourceGroups``; each flavor quotes exactly its group's resources, in order."""
    groups = groups or []
    errors: Errors = []
    parent_word = "parent" if is_cohort else "cohort"
    if len(groups) > MAX_RESOURCE_GROUPS:
        errors.append((path, _too_many(len(groups), MAX_RESOURCE_GROUPS)))
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_covered = 0
    for g, group in enumerate(groups):
        gpath = f"{path}[{g}]"
        covered = group.covered_resources
        total_flavors += len(group.flavors)
        total_covered += len(covered)
        if not covered:
            errors.append((f"{gpath}.coveredResources", "Required value: must have at least 1 item"))
        elif len(covered) > MAX_COVERED_RESOURCES:
            errors.append((f"{gpath}.coveredResources", _too_many(len(covered), MAX_COVERED_RESOURCES)))
        if not group.flavors:
            errors.append((f"{gpath}.flavors", "Required value: must have at least 1 item"))
        elif len(group.flavors) > MAX_FLAVORS:
            errors.append((f"{gpath}.flavors", _too_many(len(group.flavors), MAX_FLAVORS)))
        for j, resource in enumerate(covered):
            rpath = f"{gpath}.coveredResources[{j}]"
            errors += [(rpath, f'Invalid value: "{resource}": {m}') for m in names.qualified_name(resource)]
            if resource in seen_resources:
                errors.append(
                    (rpath, f'Duplicate value: "{resource}": a resource can be in only one resource group')
                )
            seen_resources.add(resource)
        pairs = 0
        for j, flavor in enumerate(group.flavors):
            fpath = f"{gpath}.flavors[{j}]"
            pairs += len(flavor.resources)
            errors += reference(flavor.name, f"{fpath}.name")
            if flavor.name in seen_flavors:
                errors.append(
                    (
                        f"{fpath}.name",
                        f'Duplicate value: "{flavor.name}": a flavor can be in only one resource group',
                    )
                )
            seen_flavors.add(flavor.name)
            if not flavor.resources:
                errors.append((f"{fpath}.resources", "Required value: must have at least 1 item"))
            elif len(flavor.resources) > MAX_FLAVOR_RESOURCES:
                errors.append((f"{fpath}.resources", _too_many(len(flavor.resources), MAX_FLAVOR_RESOURCES)))
            if len(flavor.resources) != len(covered):
                errors.append(
                    (
                        f"{fpath}.resources",
                        "flavors must have the same number of resources as the coveredResources",
                    )
                )
            quoted: set[str] = set()
            for k, quota in enumerate(flavor.resources):
                if k >= len(covered):
                    break
                qpath = f"{fpath}.resources[{k}]"
                if quota.name in quoted:
                    errors.append((f"{qpath}.name", f'Duplicate value: "{quota.name}"'))
                elif quota.name != covered[k]:
                    errors.append(
                        (
                            f"{qpath}.name",
                            f'Invalid value: "{quota.name}": must match the name in coveredResources ("{covered[k]}")',
                        )
                    )
                quoted.add(quota.name)
                if quota.nominal_quota < 0:
                    errors.append(
                        (
                            f"{qpath}.nominalQuota",
                            f'Invalid value: "{_quantity_text(quota.nominal_quota)}": {NEGATIVE}',
                        )
                    )
                if quota.borrowing_limit is not None:
                    if not has_parent:
                        errors.append((f"{qpath}.borrowingLimit", f"must be nil when {parent_word} is empty"))
                    if quota.borrowing_limit < 0:
                        errors.append(
                            (
                                f"{qpath}.borrowingLimit",
                                f'Invalid value: "{_quantity_text(quota.borrowing_limit)}": {NEGATIVE}',
                            )
                        )
                if quota.lending_limit is not None:
                    if quota.lending_limit < 0:
                        errors.append(
                            (
                                f"{qpath}.lendingLimit",
                                f'Invalid value: "{_quantity_text(quota.lending_limit)}": {NEGATIVE}',
                            )
                        )
                    if not has_parent:
                        errors.append((f"{qpath}.lendingLimit", f"must be nil when {parent_word} is empty"))
                    if not is_cohort and quota.lending_limit > quota.nominal_quota:
                        errors.append(
                            (
                                f"{qpath}.lendingLimit",
                                f'Invalid value: "{_quantity_text(quota.lending_limit)}": must be less than or equal to the nominalQuota',
                            )
                        )
        if pairs > MAX_FLAVOR_RESOURCE_PAIRS:
            errors.append(
                (
                    gpath,
                    f"number of flavor-resource combinations in a resourceGroup must be at most {MAX_FLAVOR_RESOURCE_PAIRS}, got {pairs}",
                )
            )
    if total_flavors > MAX_TOTAL_FLAVORS:
        errors.append(
            (
                path,
                f"total number of flavors across all resourceGroups must be at most {MAX_TOTAL_FLAVORS}, got {total_flavors}",
            )
        )
    if total_covered > MAX_TOTAL_COVERED_RESOURCES:
        errors.append(
            (
                path,
                f"total number of covered resources across all resourceGroups must be at most {MAX_TOTAL_COVERED_RESOURCES}, got {total_covered}",
            )
        )
    return errors


def fair_sharing(fs: v2.FairSharing | None, path: str) -> Errors:
    if fs is None or fs.weight is None:
        return []
    if fs.weight < 0:
        return [(path + ".weight", f'Invalid value: "{_quantity_text(fs.weight)}": {NEGATIVE}')]
    if 0 < fs.weight <= Fraction(1, 10**9):
        return [
            (
                path + ".weight",
                f'Invalid value: "{_quantity_text(fs.weight)}": when not 0, weight must be > 10e-9',
            )
        ]
    return []


# --- kinds -----------------------------------------------------------------------------------------------


def cluster_queue(cq: v2.ClusterQueue) -> Errors:
    spec = cq.spec
    errors = reference(spec.cohort_name, "spec.cohortName")
    errors += resource_groups(spec.resource_groups, has_parent=bool(spec.cohort_name), is_cohort=False)
    errors += label_selector(spec.namespace_selector, "spec.namespaceSelector")
    preemption = spec.preemption
    if preemption is not None:
        reclaim = preemption.reclaim_within_cohort or "Never"
        borrow = preemption.borrow_within_cohort
        if reclaim == "Never" and borrow is not None and (borrow.policy or "Never") != "Never":
            errors.append(
                ("spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
            )
    fungibility = spec.flavor_fungibility
    if fungibility is not None and fungibility.preference is not None:
        borrow_policy = fungibility.when_can_borrow or "MayStopSearch"
        preempt_policy = fungibility.when_can_preempt or "TryNextFlavor"
        if borrow_policy != "TryNextFlavor" or preempt_policy != "TryNextFlavor":
            errors.append(
                (
                    "spec.flavorFungibility.preference",
                    f'preference "{fungibility.preference}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
                )
            )
    errors += fair_sharing(spec.fair_sharing, "spec.fairSharing")
    errors += admission_checks_strategy(spec)
    return errors


def admission_checks_strategy(spec: v2.ClusterQueueSpec) -> Errors:
    strategy = spec.admission_checks_strategy
    if strategy is None:
        return []
    path = "spec.admissionChecksStrategy.admissionChecks"
    rules = strategy.admission_checks or []
    errors: Errors = []
    if not rules:
        errors.append((path, "Required value: must have at least 1 item"))
    elif len(rules) > MAX_ADMISSION_CHECKS:
        errors.append((path, _too_many(len(rules), MAX_ADMISSION_CHECKS)))
    flavors = sorted({f.name for g in spec.resource_groups or [] for f in g.flavors})
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        rpath = f"{path}[{i}]"
        if not rule.name:
            errors.append((f"{rpath}.name", "Required value"))
        elif len(rule.name) > 316:
            errors.append((f"{rpath}.name", "Too long: may not be more than 316 bytes"))
        if rule.name in seen:
            errors.append((f"{rpath}.name", f'Duplicate value: "{rule.name}"'))
        seen.add(rule.name)
        on = rule.on_flavors or []
        if len(on) > MAX_ADMISSION_CHECKS:
            errors.append((f"{rpath}.onFlavors", _too_many(len(on), MAX_ADMISSION_CHECKS)))
        seen_on: set[str] = set()
        for j, flavor in enumerate(on):
            if flavor in seen_on:
                errors.append((f"{rpath}.onFlavors[{j}]", f'Duplicate value: "{flavor}"'))
            seen_on.add(flavor)
            if flavor not in flavors:
                errors.append((f"{rpath}.onFlavors[{j}]", _supported(flavor, flavors)))
    return errors


def cohort(obj: v2.Cohort) -> Errors:
    spec = obj.spec
    errors = reference(spec.parent_name, "spec.parentName")
    errors += resource_groups(spec.resource_groups, has_parent=bool(spec.parent_name), is_cohort=True)
    errors += fair_sharing(spec.fair_sharing, "spec.fairSharing")
    return errors


def local_queue(obj: v2.LocalQueue) -> Errors:
    return reference(obj.spec.cluster_queue, "spec.clusterQueue") + fair_sharing(
        obj.spec.fair_sharing, "spec.fairSharing"
    )


def resource_flavor(obj: v2.ResourceFlavor) -> Errors:
    spec = obj.spec
    errors: Errors = []
    node_labels = spec.node_labels or {}
    if len(node_labels) > MAX_NODE_LABELS:
        errors.append(
            ("spec.nodeLabels", f"Too many: {len(node_labels)}: must have at most {MAX_NODE_LABELS} items")
        )
    errors += labels(node_labels, "spec.nodeLabels")
    errors += node_taints(spec.node_taints, "spec.nodeTaints")
    errors += tolerations(spec.tolerations, "spec.tolerations", limit=MAX_FLAVOR_TOLERATIONS)
    errors += reference(spec.topology_name, "spec.topologyName")
    if spec.topology_name is not None and not node_labels:
        errors.append(("spec", "at least one nodeLabel is required when topology is set"))
    return errors


def admission_check(obj: v2.AdmissionCheck) -> Errors:
    name = obj.spec.controller_name
    if not name:
        return [("spec.controllerName", "Required value: must not be empty")]
    if len(name) > 253:
        return [("spec.controllerName", "Too long: may not be more than 253 bytes")]
    return []


MAX_MULTIKUEUE_CLUSTERS = 20
MAX_MULTIKUEUE_NAME = 256  # a cluster name in a MultiKueueConfig, a kubeconfig location, a profile name


def _bounded_name(value: str, path: str) -> Errors:
    if not value:
        return [(path, "Required value")]
    if len(value) > MAX_MULTIKUEUE_NAME:
        return [(path, f"Too long: may not be more than {MAX_MULTIKUEUE_NAME} bytes")]
    return []


def multikueue_config(obj: v2.MultiKueueConfig) -> Errors:
    """Upstream's markers on ``spec.clusters``: 1 to 20 names, each at most 256 bytes, no repeats."""
    clusters = obj.spec.clusters or []
    path = "spec.clusters"
    if not clusters:
        return [(path, "Required value")]
    errors: Errors = []
    if len(clusters) > MAX_MULTIKUEUE_CLUSTERS:
        errors.append((path, _too_many(len(clusters), MAX_MULTIKUEUE_CLUSTERS)))
    seen: set[str] = set()
    for i, name in enumerate(clusters):
        if len(name) > MAX_MULTIKUEUE_NAME:
            errors.append((f"{path}[{i}]", f"Too long: may not be more than {MAX_MULTIKUEUE_NAME} bytes"))
        if name in seen:
            errors.append((f"{path}[{i}]", f'Duplicate value: "{name}"'))
        seen.add(name)
    return errors


def multikueue_cluster(obj: v2.MultiKueueCluster) -> Errors:
    """Exactly one cluster source (a kubeconfig or a ClusterProfile), its names bounded as upstream's."""
    source = obj.spec.cluster_source
    path = "spec.clusterSource"
    if (source.kube_config is None) == (source.cluster_profile_ref is None):
        return [(path, "Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set")]
    if source.kube_config is not None:
        return _bounded_name(source.kube_config.location, f"{path}.kubeConfig.location")
    assert source.cluster_profile_ref is not None
    return _bounded_name(source.cluster_profile_ref.name, f"{path}.clusterProfileRef.name")


def priority_class(obj: PriorityClass) -> Errors:
    name = obj.metadata.name or ""
    errors: Errors = []
    if name in SYSTEM_PRIORITY_CLASSES:
        if obj.value != SYSTEM_PRIORITY_CLASSES[name]:
            errors.append(
                (
                    "value",
                    f"Invalid value: {obj.value}: must be {SYSTEM_PRIORITY_CLASSES[name]} for the system class",
                )
            )
    elif name.startswith("system-"):
        errors.append(
            (
                "metadata.name",
                f"Invalid value: \"{name}\": priority class names with 'system-' prefix are reserved",
            )
        )
    elif obj.value > HIGHEST_USER_PRIORITY:
        errors.append(
            (
                "value",
                f"Invalid value: {obj.value}: maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    return errors


# --- Workload ------------------------------------------------------------------------------------------


def _resource_list(values: dict[str, Fraction] | None, path: str) -> Errors:
    errors: Errors = []
    for name, value in (values or {}).items():
        if name == PODS:
            errors.append((f"{path}[{name}]", f'Invalid value: "{name}": {RESERVED_PODS}'))
        if value < 0:
            errors.append((f"{path}[{name}]", f'Invalid value: "{_quantity_text(value)}": {NEGATIVE}'))
    return errors


def pod_spec(spec: PodSpec, path: str) -> Errors:
    """What Kueue checks in a pod template: no ``pods`` key, no negative quantity; sane selectors."""
    errors: Errors = []
    for field, containers in (
        ("initContainers", spec.init_containers or []),
        ("containers", spec.containers),
    ):
        for i, container in enumerate(containers):
            cpath = f"{path}.{field}[{i}].resources"
            if container.resources is not None:
                errors += _resource_list(container.resources.requests, f"{cpath}.requests")
                errors += _resource_list(container.resources.limits, f"{cpath}.limits")
    if spec.resources is not None:
        errors += _resource_list(spec.resources.requests, f"{path}.resources.requests")
        errors += _resource_list(spec.resources.limits, f"{path}.resources.limits")
    for name, value in (spec.overhead or {}).items():
        if value < 0:
            errors.append(
                (f"{path}.overhead[{name}]", f'Invalid value: "{_quantity_text(value)}": {NEGATIVE}')
            )
    errors += tolerations(spec.tolerations, f"{path}.tolerations")
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None:
        tpath = (
            f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        )
        for i, term in enumerate(required.node_selector_terms):
            for j, req in enumerate(term.match_expressions or []):
                if req.operator not in NODE_SELECTOR_OPERATORS:
                    errors.append(
                        (
                            f"{tpath}[{i}].matchExpressions[{j}].operator",
                            _supported(req.operator, NODE_SELECTOR_OPERATORS),
                        )
                    )
    return errors


def workload(wl: v2.Workload) -> Errors:
    errors = workload_spec(wl.spec)
    if wl.status is not None:
        errors += workload_status(wl)
    return errors


def workload_spec(spec: v2.WorkloadSpec) -> Errors:
    errors = reference(spec.queue_name, "spec.queueName")
    pod_sets = spec.pod_sets
    if not pod_sets:
        errors.append(("spec.podSets", "Required value: must have at least 1 item"))
    elif len(pod_sets) > MAX_POD_SETS:
        errors.append(("spec.podSets", _too_many(len(pod_sets), MAX_POD_SETS)))
    seen: set[str] = set()
    with_min_count = 0
    for i, ps in enumerate(pod_sets):
        ppath = f"spec.podSets[{i}]"
        errors += reference(ps.name, f"{ppath}.name", label=True)
        if ps.name in seen:
            errors.append((f"{ppath}.name", f'Duplicate value: "{ps.name}"'))
        seen.add(ps.name)
        if ps.min_count is not None:
            with_min_count += 1
            if ps.min_count > ps.count:
                errors.append((f"{ppath}.minCount", "minCount should be positive and less or equal to count"))
        errors += pod_spec(ps.template.spec, f"{ppath}.template.spec")
    if with_min_count > 1:
        errors.append(
            ("spec.podSets", f"Invalid value: {with_min_count}: at most one podSet can use minCount")
        )
    ref = spec.priority_class_ref
    if ref is not None:
        if ref.group == "scheduling.k8s.io" and ref.kind != "PriorityClass":
            errors.append(
                (
                    "spec.priorityClassRef",
                    "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
                )
            )
        if ref.group == "kueue.x-k8s.io" and ref.kind != "WorkloadPriorityClass":
            errors.append(
                (
                    "spec.priorityClassRef",
                    "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
                )
            )
        errors += reference(ref.name, "spec.priorityClassRef.name")
    return errors


def workload_status(wl: v2.Workload) -> Errors:
    status = wl.status
    assert status is not None
    errors: Errors = []
    counts = {ps.name: ps.count for ps in wl.spec.pod_sets}
    known = list(counts)
    admission = status.admission
    if admission is not None:
        apath = "status.admission"
        errors += reference(admission.cluster_queue, f"{apath}.clusterQueue")
        if len(admission.pod_set_assignments) != len(wl.spec.pod_sets):
            errors.append(
                (
                    f"{apath}.podSetAssignments",
                    "podSetAssignments must have the same number of podSets as the spec",
                )
            )
        for i, psa in enumerate(admission.pod_set_assignments):
            ppath = f"{apath}.podSetAssignments[{i}]"
            if psa.name not in counts:
                errors.append((f"{ppath}.name", f'Not found: "{psa.name}"'))
            count = psa.count if psa.count is not None else counts.get(psa.name, 0)
            if count > 0:
                for resource, usage in (psa.resource_usage or {}).items():
                    if to_canonical(resource, usage) % count:
                        errors.append((f"{ppath}.resourceUsage[{resource}]", f"is not a multiple of {count}"))
            for resource, flavor in (psa.flavors or {}).items():
                errors += reference(flavor, f"{ppath}.flavors[{resource}]")
    for rp in status.reclaimable_pods or []:
        rpath = f"status.reclaimablePods[{rp.name}]"
        if rp.name not in counts:
            errors.append((f"{rpath}.name", _supported(rp.name, known)))
        elif rp.count > counts[rp.name]:
            errors.append(
                (f"{rpath}.count", f"Invalid value: {rp.count}: should be less or equal to {counts[rp.name]}")
            )
    return errors


# --- Workload updates (upstream's ValidateWorkloadUpdate, beyond ValidateWorkload of the new object) -----

IMMUTABLE = "Invalid value: field is immutable"  # apimachinery's ValidateImmutableField, the value omitted


def quota_reserved(wl: v2.Workload) -> bool:
    """Upstream's ``workload.HasQuotaReservation``: the QuotaReserved condition is True."""
    conditions = wl.status.conditions if wl.status is not None else None
    if not isinstance(conditions, list):
        return False
    return any(isinstance(c, dict) and c.get("type") == "QuotaReserved" and c.get("status") == "True"
               for c in conditions)


def workload_update(new: v2.Workload, old: v2.Workload) -> Errors:
    """What upstream's webhook refuses in a Workload update on top of the new object's own problems:
    the pod sets while the old object holds quota, a reclaimable-pod count going down (or an entry
    going away) while both hold it, and an admission changed in place (setting or clearing it is fine).

    Upstream's paths and words; where upstream prints a whole Go struct as the bad value (the pod sets,
    the admission), it is left out, as apimachinery's ``field.OmitValueType`` leaves it out.
    """
    errors: Errors = []
    if quota_reserved(old):
        errors += _immutable_pod_sets(new.spec.pod_sets, old.spec.pod_sets, elastic=_elastic(old))
    if quota_reserved(new) and quota_reserved(old):
        errors += _reclaimable_pods_update(new, old)
    errors += _admission_update(new.status.admission if new.status is not None else None,
                                old.status.admission if old.status is not None else None)
    return errors


def _elastic(wl: v2.Workload) -> bool:
    """An elastic job's Workload (upstream's ``workloadslicing.Enabled``: the annotation is "true")."""
    return (wl.metadata.annotations or {}).get(ELASTIC_JOB_ANNOTATION) == "true"


def _semantic(value: Any) -> Any:
    """A model as apimachinery's ``Semantic.DeepEqual`` sees the Go struct it decodes to: an absent field,
    null, ``{}``, ``[]`` and ``""`` are all the zero value (a Go client's Get-then-Update sends
    ``metadata: {}`` and ``resources: {}`` where the stored object had nothing); quantities by value."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_none=True, warnings=False)  # a quantity dumps as its exact Fraction's text
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if not _zero(v)}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _zero(value: Any) -> bool:
    return value is None or (isinstance(value, dict | list | str) and not value)


def semantically_equal(a: BaseModel, b: BaseModel) -> bool:
    return _semantic(a) == _semantic(b)


def _immutable_pod_sets(new: list[v2.PodSet], old: list[v2.PodSet], *, elastic: bool) -> Errors:
    # upstream's validateImmutablePodSets: the list as a whole when its length changes, else each pod set,
    # at upstream's path (``path.Child(strconv.Itoa(i))``: ``spec.podSets.1``, not ``spec.podSets[1]``).
    # An elastic job's Workload (ElasticJobsViaWorkloadSlices, on by default) may have a count go down
    # (its slice scaled down in place); any other Workload's pod sets are fixed, as upstream's: a count
    # lowered under a running job would let what runs exceed what is counted. Compared as apimachinery's
    # Semantic compares the decoded structs (``semantically_equal``: absent and empty alike, quantities by value).
    if len(new) != len(old):
        return [("spec.podSets", IMMUTABLE)]
    return [(f"spec.podSets.{i}", IMMUTABLE) for i, (n, o) in enumerate(zip(new, old, strict=True))
            if not semantically_equal(n, o) and not (
                elastic and n.count < o.count and semantically_equal(n.model_copy(update={"count": o.count}), o))]


def _reclaimable_pods_update(new: v2.Workload, old: v2.Workload) -> Errors:
    # upstream's validateReclaimablePodsUpdate, called only while both objects hold quota
    assert new.status is not None and old.status is not None
    new_counts = {rp.name: rp.count for rp in new.status.reclaimable_pods or []}
    old_counts = {rp.name: rp.count for rp in old.status.reclaimable_pods or []}
    if new_counts == old_counts or not old_counts:
        return []
    errors: Errors = []
    for name, count in new_counts.items():
        before = old_counts.get(name)
        if before is not None and count < before:
            errors.append((f"status.reclaimablePods[{name}].count",
                           f"Invalid value: {count}: cannot be less then {before}"))  # upstream's "then"
    errors += [(f"status.reclaimablePods[{name}]", "Required value: cannot be removed")
               for name in old_counts if name not in new_counts]
    return errors


def _admission_update(new: v2.Admission | None, old: v2.Admission | None) -> Errors:
    # upstream's validateAdmissionUpdate: set or cleared freely, never changed in place. With
    # TopologyAwareScheduling (on by default) each assignment's topologyAssignment and
    # delayedTopologyRequest may change, matched by position as upstream matches them.
    if new is None or old is None:
        return []
    if len(new.pod_set_assignments) == len(old.pod_set_assignments):
        old = old.model_copy(update={"pod_set_assignments": [
            o.model_copy(update={"topology_assignment": n.topology_assignment,
                                 "delayed_topology_request": n.delayed_topology_request})
            for n, o in zip(new.pod_set_assignments, old.pod_set_assignments, strict=True)]})
    return [] if new == old else [("status.admission", IMMUTABLE)]
