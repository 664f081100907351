"""Kueue's CustomResourceDefinitions, generated from pykueue's own pydantic models.

The controller will run against a real API server, which must know Kueue's kinds. Rather than copy
upstream's generated YAML, the spec schemas are derived from the models in ``pykueue.api.models`` (so
the API server and the simulator accept the same shapes) and turned into structural OpenAPI v3:
``$ref`` inlined, ``X | None`` read as ``X``, Literals as ``enum``, quantities as int-or-string with
the Kubernetes quantity pattern, and every node typed. Three small tables then add what a pydantic model
cannot say: ``REPLACEMENTS`` (nodes kept open, such as pod templates), ``CONSTRAINTS`` (list types,
item limits and name patterns, as upstream declares them) and ``DEFAULTS`` (upstream's ``default:``
values, each one the value pykueue's API layer already assumes when the field is absent, so an object
read back from the server means the same to pykueue as the one that was applied). Status schemas are
written by hand after upstream's Go types, since the models only read the parts of status they need.

Upstream's cross-field rules that the API server itself enforces (``+kubebuilder:validation:XValidation``
in ``apis/kueue/v1beta2/*_types.go``) are added as CEL ``x-kubernetes-validations`` from ``VALIDATIONS``,
with upstream's messages; ``pykueue.api.validation`` holds the same rules for ``pykueue validate`` and the
controller's validating webhooks, which run it on every object the CEL rules let through. Three Workload
update rules upstream enforces only in its webhook (pod sets fixed while quota is reserved, reclaimable
pods never fewer, the admission never changed in place) are added as CEL too (``_UPDATE_RULES``), so they
hold without the webhook; those are pykueue's, not upstream's markers.

v1beta2 is stored; v1beta1 is served too, with the v1beta1 models where its shape differs (ClusterQueue's
``cohort``, Workload's ``priorityClassName``...). The four kinds whose shape differs are converted by the
controller's webhook (``spec.conversion.strategy: Webhook``, the Service of the release manifest's
namespace; the controller patches its CA bundle in); the others differ only in ``apiVersion``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, get_args

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from pykueue.api.models import kueue_v1beta1 as v1
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import Quantity
from pykueue.api.validation import (
    MAX_ADMISSION_CHECKS,
    MAX_COVERED_RESOURCES,
    MAX_FLAVOR_RESOURCES,
    MAX_FLAVOR_TOLERATIONS,
    MAX_FLAVORS,
    MAX_MULTIKUEUE_CLUSTERS,
    MAX_MULTIKUEUE_NAME,
    MAX_NODE_LABELS,
    MAX_NODE_TAINTS,
    MAX_POD_SETS,
    MAX_RESOURCE_GROUPS,
)
from pykueue.controller.webhooks import names as webhook_names

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"  # stored, and the first of VERSIONS (kubectl's preferred version)
V1BETA1 = "v1beta1"
VERSIONS = (VERSION, V1BETA1)

# apimachinery's resource.Quantity, as every CRD with a Quantity field declares it
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT_OR_STRING = "x-kubernetes-int-or-string"
PRESERVE = "x-kubernetes-preserve-unknown-fields"
_QUANTITY_MARK = "x-pykueue-quantity"  # set by _Generator, consumed by _structural
_QUANTITY_VALIDATOR = get_args(Quantity)[1].func

HEADER = (
    "# Kueue's CustomResourceDefinitions (kueue.x-k8s.io, v1beta2 stored, v1beta1 served), generated from\n"
    "# pykueue's models by `pykueue manifests crds` (or `python -m pykueue.manifests crds`). Do not edit.\n"
)


class SchemaError(ValueError):
    """A model holds a shape that has no structural OpenAPI form (the generator must be taught it)."""


class _Generator(GenerateJsonSchema):
    """pydantic's JSON Schema, except that a ``Quantity`` is marked instead of rendered as ``{}``."""

    def function_plain_schema(self, schema: Any) -> dict[str, Any]:
        if schema.get("function", {}).get("function") is _QUANTITY_VALIDATOR:
            return {_QUANTITY_MARK: True}
        return super().function_plain_schema(schema)


# --- small schema builders (also used by the hand-written status schemas) ---------------------------------


def string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def int32(**extra: Any) -> dict[str, Any]:
    return {"type": "integer", "format": "int32", **extra}


def int64(**extra: Any) -> dict[str, Any]:
    return {"type": "integer", "format": "int64", **extra}


def timestamp() -> dict[str, Any]:
    return {"type": "string", "format": "date-time"}


def quantity() -> dict[str, Any]:
    """An int-or-string the API server checks against the quantity pattern."""
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        INT_OR_STRING: True,
    }


def reference(max_length: int = 253, pattern: str = DNS_SUBDOMAIN) -> dict[str, Any]:
    """The name of another object: a DNS-1123 subdomain unless told otherwise."""
    return {"type": "string", "maxLength": max_length, "pattern": pattern}


def open_object() -> dict[str, Any]:
    """An object kept as sent: nothing under it is validated or pruned."""
    return {"type": "object", PRESERVE: True}


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    out.update(extra)
    return out


def string_map(values: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values or string()}


def array(items: dict[str, Any], *, keys: tuple[str, ...] = (), list_type: str | None = None,
          **extra: Any) -> dict[str, Any]:
    """A list; ``keys`` makes it a list map (merged item by item by server-side apply)."""
    out: dict[str, Any] = {"type": "array", "items": items, **extra}
    if keys:
        out["x-kubernetes-list-type"] = "map"
        out["x-kubernetes-list-map-keys"] = list(keys)
    elif list_type:
        out["x-kubernetes-list-type"] = list_type
    return out


# --- model -> structural schema ----------------------------------------------------------------------------

# JSON Schema keywords that mean the same in a CRD's OpenAPI v3 schema
_SAME = {"type", "format", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "minItems",
         "maxItems", "minProperties", "maxProperties", "multipleOf", "required"}
_DROPPED = {"title", "description"}  # docstrings and titles are for developers, not for kubectl explain


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of one model (its defs inlined)."""
    raw = model.model_json_schema(by_alias=True, mode="validation", schema_generator=_Generator)
    defs = raw.pop("$defs", {})
    return _structural(raw, defs, model.__name__)


def _structural(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    """One JSON Schema node of pydantic's as a structural OpenAPI node; ``where`` names it in errors."""
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _structural({**defs[name], **rest}, defs, where)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        if len(options) != 1:
            raise SchemaError(f"{where}: a union of several types has no structural form")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        return _structural({**options[0], **rest}, defs, where)
    if node.get(_QUANTITY_MARK):
        out = quantity()
        if node.get("default") is not None:
            out["default"] = node["default"]
        return out
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs, f"{where}.{name}") for name, sub in value.items()}
        elif key == "items":
            out[key] = _structural(value, defs, f"{where}[]")
        elif key == "additionalProperties":
            # False (a closed model): the CRD prunes, or under strict field validation rejects, unknown
            # fields anyway. True (``dict[str, Any]``): values of any shape, kept as sent.
            if isinstance(value, dict):
                out[key] = _structural(value, defs, f"{where}{{}}")
            elif value is True:
                out[PRESERVE] = True
        elif key == "const":
            out["enum"] = [value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):  # JSON Schema 2020 -> OpenAPI 3.0
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        elif key == "default" or key in _SAME:
            out[key] = value
        else:
            raise SchemaError(f"{where}: no OpenAPI form for the keyword {key!r}")
    if "enum" in out and "type" not in out:
        out["type"] = _enum_type(out["enum"], where)
    if "type" not in out:  # ``Any``: a part the models leave unmodelled
        return {**open_object(), **({"default": out["default"]} if "default" in out else {})}
    bounded = out.get("minimum", INT32_MIN) >= INT32_MIN and out.get("maximum", INT32_MAX + 1) <= INT32_MAX
    if out["type"] == "integer" and bounded:  # pydantic's Int32 aliases: int32 as upstream's Go fields
        out["format"] = "int32"
    return out


def _enum_type(values: list[Any], where: str) -> str:
    for name, python_type in (("boolean", bool), ("integer", int), ("string", str)):
        if all(type(v) is python_type for v in values):
            return name
    raise SchemaError(f"{where}: an enum of mixed types has no structural form")


# --- hand-written status schemas (after upstream's apis/kueue/v1beta2/*_types.go) ---------------------------

CONDITION = obj(
    {
        "type": string(maxLength=316, pattern=CONDITION_TYPE),
        "status": string(enum=["True", "False", "Unknown"]),
        "reason": string(minLength=1, maxLength=1024, pattern=CONDITION_REASON),
        "message": string(maxLength=32768),
        "lastTransitionTime": timestamp(),
        "observedGeneration": int64(minimum=0),
    },
    required=("type", "status", "lastTransitionTime", "reason", "message"),
)


def conditions(max_items: int | None = 16) -> dict[str, Any]:
    extra = {"maxItems": max_items} if max_items is not None else {}
    return array(CONDITION, keys=("type",), **extra)


def _fair_sharing_status() -> dict[str, Any]:
    return obj(
        {
            "weightedShare": int64(),
            "admissionFairSharingStatus": obj(
                {"consumedResources": string_map(quantity()), "lastUpdate": timestamp()},
                required=("consumedResources", "lastUpdate"),
            ),
        },
        required=("weightedShare",),
    )


def _flavor_usage(resource: dict[str, Any], limit: int) -> dict[str, Any]:
    """``flavorsReservation`` / ``flavorsUsage``: per flavor, per resource."""
    return array(
        obj(
            {"name": reference(), "resources": array(resource, keys=("name",), maxItems=limit)},
            required=("name", "resources"),
        ),
        keys=("name",),
        maxItems=limit,
    )


_CQ_RESOURCE_USAGE = obj({"name": string(), "total": quantity(), "borrowed": quantity()}, required=("name",))
_LQ_RESOURCE_USAGE = obj({"name": string(), "total": quantity()}, required=("name",))

CLUSTER_QUEUE_STATUS = obj(
    {
        "conditions": conditions(),
        "flavorsReservation": _flavor_usage(_CQ_RESOURCE_USAGE, 64),
        "flavorsUsage": _flavor_usage(_CQ_RESOURCE_USAGE, 64),
        "pendingWorkloads": int32(),
        "reservingWorkloads": int32(),
        "admittedWorkloads": int32(),
        "fairSharing": _fair_sharing_status(),
    }
)

LOCAL_QUEUE_STATUS = obj(
    {
        "conditions": conditions(),
        "pendingWorkloads": int32(),
        "reservingWorkloads": int32(),
        "admittedWorkloads": int32(),
        "flavorsReservation": _flavor_usage(_LQ_RESOURCE_USAGE, 16),
        # v1beta1 spelled it ``flavorUsage``; v1beta2 renamed it
        "flavorsUsage": _flavor_usage(_LQ_RESOURCE_USAGE, 16),
        "fairSharing": _fair_sharing_status(),
    }
)

COHORT_STATUS = obj({"conditions": conditions(), "fairSharing": _fair_sharing_status()})

ADMISSION_CHECK_STATUS = obj({"conditions": conditions(max_items=None)})
MULTIKUEUE_CLUSTER_STATUS = obj({"conditions": conditions()})
MULTIKUEUE_CLUSTER_STATUS_V1BETA1 = obj({"conditions": conditions(max_items=None)})

_POD_SET_NAME = {**reference(63, DNS_LABEL)}

WORKLOAD_STATUS = obj(
    {
        "conditions": conditions(),
        "admission": obj(
            {
                "clusterQueue": reference(),
                "podSetAssignments": array(
                    obj(
                        {
                            "name": {**_POD_SET_NAME, "default": "main"},
                            "flavors": string_map(reference()),
                            "resourceUsage": string_map(quantity()),
                            "count": int32(minimum=0),
                            "topologyAssignment": open_object(),
                            "delayedTopologyRequest": string(enum=["Pending", "Ready"]),
                        },
                    ),
                    keys=("name",),
                    maxItems=MAX_POD_SETS,
                ),
            },
            required=("clusterQueue", "podSetAssignments"),
        ),
        "requeueState": obj({"count": int32(minimum=0), "requeueAt": timestamp()}),
        "reclaimablePods": array(
            obj({"name": _POD_SET_NAME, "count": int32(minimum=0)}, required=("name", "count")),
            keys=("name",),
            maxItems=MAX_POD_SETS,
        ),
        "admissionChecks": array(
            obj(
                {
                    "name": string(minLength=1, maxLength=316),
                    "state": string(enum=["Pending", "Ready", "Retry", "Rejected"]),
                    "lastTransitionTime": timestamp(),
                    "message": string(maxLength=32768),
                    "podSetUpdates": array(open_object(), list_type="atomic", maxItems=MAX_POD_SETS),
                },
                required=("name", "state", "lastTransitionTime", "message"),
            ),
            keys=("name",),
            maxItems=MAX_POD_SETS,
        ),
        "resourceRequests": array(
            obj({"name": _POD_SET_NAME, "resources": string_map(quantity())}, required=("name",)),
            keys=("name",),
            maxItems=MAX_POD_SETS,
        ),
        "accumulatedPastExecutionTimeSeconds": int32(),
        "schedulingStats": open_object(),
        "nominatedClusterNames": array(string(maxLength=256), list_type="atomic", maxItems=10),
        "clusterName": string(maxLength=256),
        "unhealthyNodes": array(obj({"name": string(maxLength=63)}, required=("name",)), keys=("name",),
                                maxItems=MAX_POD_SETS),
    }
)


# --- what the models cannot say, by path ("a.b[]" is an item of list b, "m{}" a value of map m) ----------

_RESOURCE_GROUPS = {
    "spec.resourceGroups": {"maxItems": MAX_RESOURCE_GROUPS, "x-kubernetes-list-type": "atomic"},
    "spec.resourceGroups[].coveredResources": {
        "minItems": 1, "maxItems": MAX_COVERED_RESOURCES, "x-kubernetes-list-type": "atomic"},
    "spec.resourceGroups[].flavors": {
        "minItems": 1, "maxItems": MAX_FLAVORS, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    "spec.resourceGroups[].flavors[].name": reference(),
    "spec.resourceGroups[].flavors[].resources": {
        "minItems": 1, "maxItems": MAX_FLAVOR_RESOURCES, "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"]},
}
_SELECTOR = {
    "": {"x-kubernetes-map-type": "atomic"},
    ".matchExpressions": {"x-kubernetes-list-type": "atomic"},
    ".matchExpressions[].values": {"x-kubernetes-list-type": "atomic"},
}

CONSTRAINTS: dict[str, dict[str, dict[str, Any]]] = {
    "ClusterQueue": {
        **_RESOURCE_GROUPS,
        "spec.cohortName": reference(),
        **{f"spec.namespaceSelector{path}": extra for path, extra in _SELECTOR.items()},
        "spec.admissionChecksStrategy.admissionChecks": {
            "minItems": 1, "maxItems": MAX_ADMISSION_CHECKS, "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"]},
        "spec.admissionChecksStrategy.admissionChecks[].name": string(minLength=1, maxLength=316),
        "spec.admissionChecksStrategy.admissionChecks[].onFlavors": {
            "maxItems": MAX_ADMISSION_CHECKS, "x-kubernetes-list-type": "set"},
        "spec.admissionChecksStrategy.admissionChecks[].onFlavors[]": reference(),
    },
    "Cohort": {**_RESOURCE_GROUPS, "spec.parentName": reference()},
    "LocalQueue": {"spec.clusterQueue": reference()},
    "ResourceFlavor": {
        "spec.nodeLabels": {"maxProperties": MAX_NODE_LABELS, "x-kubernetes-map-type": "atomic"},
        "spec.nodeTaints": {"maxItems": MAX_NODE_TAINTS, "x-kubernetes-list-type": "atomic"},
        "spec.tolerations": {"maxItems": MAX_FLAVOR_TOLERATIONS, "x-kubernetes-list-type": "atomic"},
        "spec.topologyName": reference(),
    },
    "WorkloadPriorityClass": {"description": {"maxLength": 2048}},
    "AdmissionCheck": {"spec.controllerName": {"minLength": 1}},
    "MultiKueueConfig": {
        "spec.clusters": {"minItems": 1, "maxItems": MAX_MULTIKUEUE_CLUSTERS, "x-kubernetes-list-type": "set"},
        "spec.clusters[]": string(maxLength=MAX_MULTIKUEUE_NAME),
    },
    "MultiKueueCluster": {
        "spec.clusterSource.kubeConfig.location": string(minLength=1, maxLength=MAX_MULTIKUEUE_NAME),
        "spec.clusterSource.clusterProfileRef.name": string(minLength=1, maxLength=MAX_MULTIKUEUE_NAME),
    },
    "Workload": {
        "spec.podSets": {
            "minItems": 1, "maxItems": MAX_POD_SETS, "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"]},
        "spec.podSets[].name": _POD_SET_NAME,
        "spec.queueName": reference(),
        "spec.priorityClassRef.name": {**reference(), "minLength": 1},
    },
}

# Nodes replaced outright: what the models accept loosely (``Any``) or only in the parts Kueue reads.
REPLACEMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "ClusterQueue": {"spec.concurrentAdmissionPolicy": open_object()},
    "ResourceFlavor": {"spec.nodeTaints[].timeAdded": timestamp()},
    "AdmissionCheck": {"spec.parameters": open_object()},
    "Workload": {
        # a Job's whole pod template (image, command, volumes...) must survive the round trip
        "spec.podSets[].template": open_object(),
        "spec.podSets[].topologyRequest": open_object(),
    },
}

# Upstream's ``default:`` values for the fields the models cover. Each is what pykueue.api.convert
# (and validation) already assume when the field is absent, so defaulting never changes meaning;
# tests/manifests/test_crd_schema.py checks that on every example. The models' own defaults
# (``podSets[].name: main``, ``podSets[].count: 1``) come through model_schema by themselves.
DEFAULTS: dict[str, dict[str, Any]] = {
    "ClusterQueue": {
        "spec.queueingStrategy": "BestEffortFIFO",
        "spec.stopPolicy": "None",
        "spec.flavorFungibility": {},
        "spec.flavorFungibility.whenCanBorrow": "MayStopSearch",
        "spec.flavorFungibility.whenCanPreempt": "TryNextFlavor",
        "spec.preemption": {},
        "spec.preemption.reclaimWithinCohort": "Never",
        "spec.preemption.withinClusterQueue": "Never",
        "spec.preemption.borrowWithinCohort": {},
        "spec.preemption.borrowWithinCohort.policy": "Never",
        "spec.fairSharing.weight": 1,
    },
    "Cohort": {"spec.fairSharing.weight": 1},
    "LocalQueue": {"spec.stopPolicy": "None", "spec.fairSharing.weight": 1},
    "MultiKueueCluster": {"spec.clusterSource.kubeConfig.locationType": "Secret"},
    "Workload": {"spec.active": True},
}


# --- CEL rules (upstream's XValidation markers, with their messages) -----------------------------------------


def rule(text: str, message: str, field_path: str | None = None) -> dict[str, str]:
    out = {"rule": text, "message": message}
    if field_path is not None:
        out["fieldPath"] = field_path  # where the API server reports it (the rule's own node otherwise)
    return out


def _quota_reserved(obj: str) -> str:
    return (f"has({obj}.status) && has({obj}.status.conditions) && "
            f"{obj}.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')")


def _admitted(obj: str) -> str:
    return (f"has({obj}.status) && has({obj}.status.conditions) && "
            f"{obj}.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')")


_RESOURCE_GROUP_RULES = {
    "spec.resourceGroups[]": [rule("self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                                   "flavors must have the same number of resources as the coveredResources")],
}
_TAINT_EFFECT = "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"
# Upstream's toleration rules, each guarded with has() where upstream's would fail on a missing field
# (a CEL evaluation error instead of the message).
_TOLERATION_RULES = [
    rule("self.all(x, !has(x.key) ? (has(x.operator) && x.operator == 'Exists') : true)",
         "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"),
    rule("self.all(x, has(x.tolerationSeconds) ? (has(x.effect) && x.effect == 'NoExecute') : true)",
         "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    rule("self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
         "supported toleration values: 'Equal'(default), 'Exists'"),
    rule("self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
         "a value must be empty when 'operator' is 'Exists'"),
    rule("self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])", _TAINT_EFFECT),
]
_QUOTA_RESERVED_OLD = _quota_reserved("oldSelf")
_WORKLOAD_RULES = [
    rule(f"{_quota_reserved('self')} && has(self.status.admission) ? "
         "size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
         "podSetAssignments must have the same number of podSets as the spec"),
    rule(f"({_QUOTA_RESERVED_OLD}) && ({_quota_reserved('self')}) && has(oldSelf.spec.queueName) && "
         "has(self.spec.queueName) ? oldSelf.spec.queueName == self.spec.queueName : true",
         "queueName is immutable while workload quota reserved"),
    rule(f"(({_admitted('oldSelf')}) && ({_admitted('self')})) ? "
         "((has(oldSelf.spec.maximumExecutionTimeSeconds) ? oldSelf.spec.maximumExecutionTimeSeconds : 0) == "
         "(has(self.spec.maximumExecutionTimeSeconds) ? self.spec.maximumExecutionTimeSeconds : 0)) : true",
         "maximumExecutionTimeSeconds is immutable while workload quota reserved"),
]
_PRIORITY_CLASS_REF_RULES = [
    rule(f"({_QUOTA_RESERVED_OLD}) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) || "
         "(has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true",
         "priorityClassRef is immutable while workload quota reserved"),
    rule(f"({_QUOTA_RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? "
         "oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true",
         "priorityClassRef.group is immutable while workload quota reserved"),
    rule(f"({_QUOTA_RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? "
         "oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true",
         "priorityClassRef.kind is immutable while workload quota reserved"),
    rule(f"({_QUOTA_RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef) && "
         "self.spec.priorityClassRef.group == 'scheduling.k8s.io' && self.spec.priorityClassRef.kind == 'PriorityClass') ? "
         "oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
         "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved"),
]
_IMMUTABLE = [rule("self == oldSelf", "field is immutable")]

# Upstream's webhook-only update rules (pkg/webhooks/workload_webhook.go, ValidateWorkloadUpdate) as CEL, so
# the API server holds them without the webhook. Upstream has no such markers (it kept these in Go for
# CEL's cost limits): these rules are pykueue's, in upstream's words where they fit, each reported at the
# field the webhook names. The webhook still runs them precisely (pykueue.api.validation.workload_update):
# per pod set, quantities by value and each reclaimable count with its number.
_BOTH_RESERVED = f"({_QUOTA_RESERVED_OLD}) && ({_quota_reserved('self')})"
_OLD_RECLAIMABLE = "oldSelf.status.reclaimablePods"
_NEW_RECLAIMABLE = "self.status.reclaimablePods"
_OLD_ADMISSION = "oldSelf.status.admission"
_NEW_ADMISSION = "self.status.admission"


def _same_optional(field: str) -> str:
    return f"has(n.{field}) == has(o.{field}) && (!has(n.{field}) || n.{field} == o.{field})"


_UPDATE_RULES = [
    # spec.podSets fixed while the old object holds quota, but for a count going down (ElasticJobsViaWorkloadSlices,
    # on by default: an elastic job's slice scaled down in place). Only the webhook can tell an elastic job's
    # Workload (its annotation: CEL at the root sees no metadata but name and generateName), so it alone
    # refuses a lowered count on any other (pykueue.api.validation._immutable_pod_sets). The templates are the
    # webhook's alone too: CEL compares JSON as sent, and a Go client's Get-then-Update sends `metadata: {}`
    # and canonical quantities where the stored object has none or "1000m", which upstream's webhook (decoded
    # structs, apimachinery's Semantic) takes as no change.
    rule(f"({_QUOTA_RESERVED_OLD}) ? size(self.spec.podSets) == size(oldSelf.spec.podSets) && "
         "self.spec.podSets.all(n, oldSelf.spec.podSets.exists(o, o.name == n.name && n.count <= o.count && "
         f"{_same_optional('minCount')} && {_same_optional('topologyRequest')})) : true",
         "field is immutable", ".spec.podSets"),
    # while both hold quota, no reclaimable count goes down and no entry goes away
    rule(f"{_BOTH_RESERVED} && has({_OLD_RECLAIMABLE}) ? {_OLD_RECLAIMABLE}.all(o, !has({_NEW_RECLAIMABLE}) || "
         f"{_NEW_RECLAIMABLE}.all(n, n.name != o.name || n.count >= o.count)) : true",
         "reclaimablePods counts cannot decrease while workload quota reserved", ".status.reclaimablePods"),
    rule(f"{_BOTH_RESERVED} && has({_OLD_RECLAIMABLE}) ? {_OLD_RECLAIMABLE}.all(o, has({_NEW_RECLAIMABLE}) && "
         f"{_NEW_RECLAIMABLE}.exists(n, n.name == o.name)) : true",
         "reclaimablePods entries cannot be removed while workload quota reserved", ".status.reclaimablePods"),
    # the admission set or cleared, never changed in place (each assignment's topologyAssignment and
    # delayedTopologyRequest may change, as upstream's webhook allows with TopologyAwareScheduling on)
    rule(f"has(oldSelf.status) && has({_OLD_ADMISSION}) && has(self.status) && has({_NEW_ADMISSION}) ? "
         f"{_NEW_ADMISSION}.clusterQueue == {_OLD_ADMISSION}.clusterQueue && "
         f"size({_NEW_ADMISSION}.podSetAssignments) == size({_OLD_ADMISSION}.podSetAssignments) && "
         f"{_NEW_ADMISSION}.podSetAssignments.all(n, {_OLD_ADMISSION}.podSetAssignments.exists(o, o.name == n.name && "
         f"{_same_optional('flavors')} && {_same_optional('resourceUsage')} && {_same_optional('count')})) : true",
         "field is immutable", ".status.admission"),
]

# kind -> schema path (the tables' notation; "" is the root) -> rules, for v1beta2.
VALIDATIONS: dict[str, dict[str, list[dict[str, str]]]] = {
    "ClusterQueue": {
        "spec": [rule("!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all("
                      "f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                      "borrowingLimit must be nil when cohort is empty")],
        **_RESOURCE_GROUP_RULES,
        "spec.flavorFungibility": [
            rule("!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
                 "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor")],
        "spec.preemption": [
            rule("!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && "
                 "self.borrowWithinCohort.policy != 'Never')",
                 "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")],
    },
    "Cohort": {**_RESOURCE_GROUP_RULES},
    "LocalQueue": {"spec.clusterQueue": _IMMUTABLE},
    "ResourceFlavor": {
        "spec": [
            rule("!has(self.topologyName) || (has(self.nodeLabels) && self.nodeLabels.size() >= 1)",
                 "at least one nodeLabel is required when topology is set"),
            rule("!has(oldSelf.topologyName) || self == oldSelf",
                 "resourceFlavorSpec are immutable when topologyName is set"),
        ],
        "spec.nodeTaints": [rule("self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
                                 _TAINT_EFFECT)],
        "spec.tolerations": _TOLERATION_RULES,
    },
    "AdmissionCheck": {"spec.controllerName": _IMMUTABLE},
    "MultiKueueCluster": {"spec.clusterSource": [
        rule("[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
             "exactly one of the fields in [kubeConfig clusterProfileRef] must be set")]},
    "Workload": {
        "": [*_WORKLOAD_RULES[:1], *_PRIORITY_CLASS_REF_RULES, *_WORKLOAD_RULES[1:], *_UPDATE_RULES],
        "spec": [rule("!has(self.priorityClassRef) || has(self.priority)",
                      "priority should not be nil when priorityClassRef is set")],
        "spec.priorityClassRef": [
            rule("(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
                 "only the PriorityClass kind is allowed for the scheduling.k8s.io group"),
            rule("(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
                 "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"),
        ],
        "spec.podSets[]": [rule("has(self.minCount) ? self.minCount <= self.count : true",
                                "minCount should be positive and less or equal to count")],
        "status": [
            rule("!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
                 "clusterName is immutable once set"),
            rule("!has(self.clusterName) || (!has(self.nominatedClusterNames) || "
                 "(has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
                 "clusterName and nominatedClusterNames are mutually exclusive"),
        ],
    },
}

# --- v1beta1: what differs from the tables above ---------------------------------------------------------

# Paths renamed in v1beta1 (None: the field does not exist there, its entries are dropped).
V1BETA1_PATHS: dict[str, dict[str, str | None]] = {
    "ClusterQueue": {"spec.cohortName": "spec.cohort"},
    "Workload": {"spec.priorityClassRef.name": None, "spec.priorityClassRef": None},
    "MultiKueueCluster": {"spec.clusterSource.kubeConfig.location": "spec.kubeConfig.location",
                          "spec.clusterSource.kubeConfig.locationType": "spec.kubeConfig.locationType",
                          "spec.clusterSource.clusterProfileRef.name": "spec.clusterProfileRef.name",
                          "spec.clusterSource": None},
}
V1BETA1_CONSTRAINTS: dict[str, dict[str, dict[str, Any]]] = {
    "ClusterQueue": {"spec.admissionChecks": {"maxItems": MAX_ADMISSION_CHECKS, "x-kubernetes-list-type": "set"},
                     "spec.admissionChecks[]": string(minLength=1, maxLength=316)},
    "Workload": {"spec.priorityClassName": reference()},
}
_V1BETA1_SOURCE = ("has(self.spec.priorityClassSource) ? self.spec.priorityClassSource : ''",
                   "has(oldSelf.spec.priorityClassSource) ? oldSelf.spec.priorityClassSource : ''")
V1BETA1_VALIDATIONS: dict[str, dict[str, list[dict[str, str]]]] = {
    "MultiKueueCluster": {},  # v1beta1 has one kubeconfig and no choice of source
    "ClusterQueue": {
        **VALIDATIONS["ClusterQueue"],
        "spec": [rule("!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all("
                      "f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                      "borrowingLimit must be nil when cohort is empty")],
    },
    "Workload": {
        "": [
            *_WORKLOAD_RULES[:1],
            rule(f"({_QUOTA_RESERVED_OLD}) ? ({_V1BETA1_SOURCE[1]}) == ({_V1BETA1_SOURCE[0]}) : true",
                 "priorityClassSource is immutable while workload quota reserved"),
            rule(f"({_QUOTA_RESERVED_OLD} && has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName) "
                 f"&& ({_V1BETA1_SOURCE[0]}) != 'kueue.x-k8s.io/workloadpriorityclass') ? "
                 "oldSelf.spec.priorityClassName == self.spec.priorityClassName : true",
                 "priorityClassName is immutable while workload quota reserved"),
            *_WORKLOAD_RULES[1:],
            *_UPDATE_RULES,
        ],
        "spec": [rule("has(self.priorityClassName) ? has(self.priority) : true",
                      "priority should not be nil when priorityClassName is set")],
        "spec.podSets[]": VALIDATIONS["Workload"]["spec.podSets[]"],
        "status": VALIDATIONS["Workload"]["status"],
    },
}


def _renamed(schema: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    out["properties"] = {new if name == old else name: sub for name, sub in out["properties"].items()}
    return out


# v1beta1 spelled these status fields differently (upstream converts them by hand)
LOCAL_QUEUE_STATUS_V1BETA1 = _renamed(LOCAL_QUEUE_STATUS, "flavorsUsage", "flavorUsage")
WORKLOAD_STATUS_V1BETA1 = _renamed(WORKLOAD_STATUS, "accumulatedPastExecutionTimeSeconds",
                                   "accumulatedPastExexcutionTimeSeconds")


# --- the kinds ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One CRD: the model its schema comes from, its names, scope, columns and status schema."""

    kind: str
    plural: str
    model: type[BaseModel]
    namespaced: bool = False
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()  # upstream declares none
    columns: tuple[dict[str, Any], ...] = ()
    status: dict[str, Any] | None = None
    description: str = ""
    model_v1beta1: type[BaseModel] | None = None  # None: v1beta1 has v1beta2's shape
    status_v1beta1: dict[str, Any] | None = None  # None: v1beta2's status schema
    conversion: bool = False  # the versions differ in shape: the controller's webhook converts

    def model_of(self, version: str) -> type[BaseModel]:
        return self.model_v1beta1 or self.model if version == V1BETA1 else self.model

    def status_of(self, version: str) -> dict[str, Any] | None:
        return self.status_v1beta1 or self.status if version == V1BETA1 else self.status

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def name(self) -> str:
        return f"{self.plural}.{GROUP}"


def _column(name: str, path: str, kind: str, description: str, priority: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path, "description": description}
    if priority:
        out["priority"] = priority
    return out


KINDS: tuple[Kind, ...] = (
    Kind(
        "ResourceFlavor", "resourceflavors", v2.ResourceFlavor, short_names=("flavor", "flavors", "rf"),
        description="A kind of node (labels, taints) that quota is given in.",
    ),
    Kind(
        "ClusterQueue", "clusterqueues", v2.ClusterQueue, short_names=("cq",),
        columns=(
            _column("Cohort", ".spec.cohortName", "string", "Cohort that this ClusterQueue belongs to"),
            _column("Strategy", ".spec.queueingStrategy", "string",
                    "The queueing strategy used to prioritize workloads", 1),
            _column("Pending Workloads", ".status.pendingWorkloads", "integer", "Number of pending workloads"),
            _column("Admitted Workloads", ".status.admittedWorkloads", "integer",
                    "Number of admitted workloads that haven't finished yet", 1),
        ),
        status=CLUSTER_QUEUE_STATUS,
        model_v1beta1=v1.ClusterQueue,
        conversion=True,
        description="Quota per flavor and resource, and the policies workloads are admitted under.",
    ),
    Kind(
        "Cohort", "cohorts", v2.Cohort, status=COHORT_STATUS, conversion=True,
        description="A group of ClusterQueues (and Cohorts) that borrow unused quota from each other.",
    ),
    Kind(
        "WorkloadPriorityClass", "workloadpriorityclasses", v2.WorkloadPriorityClass,
        columns=(_column("Value", ".value", "integer", "Value of workloadPriorityClass's Priority"),),
        description="A priority for workloads that does not touch their pods' priority.",
    ),
    Kind(
        "AdmissionCheck", "admissionchecks", v2.AdmissionCheck, status=ADMISSION_CHECK_STATUS,
        model_v1beta1=v1.AdmissionCheck,
        description="A check a controller must pass before a workload with reserved quota is admitted.",
    ),
    Kind(
        "MultiKueueConfig", "multikueueconfigs", v2.MultiKueueConfig,
        description="The worker clusters a MultiKueue admission check dispatches workloads to.",
    ),
    Kind(
        "MultiKueueCluster", "multikueueclusters", v2.MultiKueueCluster,
        columns=(
            _column("Connected", ".status.conditions[?(@.type=='Active')].status", "string",
                    "MultiKueueCluster is connected"),
            _column("Age", ".metadata.creationTimestamp", "date", "Time this workload was created"),
        ),
        status=MULTIKUEUE_CLUSTER_STATUS,
        status_v1beta1=MULTIKUEUE_CLUSTER_STATUS_V1BETA1,
        model_v1beta1=v1.MultiKueueCluster,
        conversion=True,
        description="A worker cluster of MultiKueue: where its kubeconfig is, and whether it is connected.",
    ),
    Kind(
        "LocalQueue", "localqueues", v2.LocalQueue, namespaced=True, short_names=("queue", "queues", "lq"),
        columns=(
            _column("ClusterQueue", ".spec.clusterQueue", "string", "Backing ClusterQueue"),
            _column("Pending Workloads", ".status.pendingWorkloads", "integer", "Number of pending workloads"),
            _column("Admitted Workloads", ".status.admittedWorkloads", "integer",
                    "Number of admitted workloads that haven't finished yet."),
        ),
        status=LOCAL_QUEUE_STATUS,
        status_v1beta1=LOCAL_QUEUE_STATUS_V1BETA1,
        conversion=True,
        description="The namespaced queue users submit workloads to.",
    ),
    Kind(
        "Workload", "workloads", v2.Workload, namespaced=True, short_names=("wl",),
        columns=(
            _column("Queue", ".spec.queueName", "string", "Name of the queue this workload was submitted to"),
            _column("Reserved in", ".status.admission.clusterQueue", "string",
                    "Name of the ClusterQueue where the workload is reserving quota"),
            _column("Admitted", ".status.conditions[?(@.type=='Admitted')].status", "string", "Admission status"),
            _column("Finished", ".status.conditions[?(@.type=='Finished')].status", "string", "Workload finished"),
            _column("Age", ".metadata.creationTimestamp", "date", "Time this workload was created"),
        ),
        status=WORKLOAD_STATUS,
        model_v1beta1=v1.Workload,
        status_v1beta1=WORKLOAD_STATUS_V1BETA1,
        conversion=True,
        description="A unit of admission: pod sets with their counts and pod templates.",
    ),
)


def _node(schema: dict[str, Any], path: str, where: str) -> tuple[dict[str, Any], str]:
    """The parent of the node at ``path`` and the key under which it sits (``[]`` items, ``{}`` values)."""
    parent: dict[str, Any] = {"": schema}  # the root, for the empty path
    key = ""
    node = schema
    for part in path.replace("[]", ".[]").replace("{}", ".{}").split("."):
        if not part:
            continue
        parent = node
        if part == "[]":
            key = "items"
        elif part == "{}":
            key = "additionalProperties"
        else:
            key = part
            parent = node.get("properties", {})
        if key not in parent or not isinstance(parent[key], dict):
            raise SchemaError(f"{where}: no node at {path!r}")
        node = parent[key]
    return parent, key


def node_at(schema: dict[str, Any], path: str, where: str = "") -> dict[str, Any]:
    """The node at ``path`` (see the tables above for the notation); ``SchemaError`` when there is none."""
    parent, key = _node(schema, path, where)
    return parent[key]


def _table(table: dict[str, dict[str, Any]], kind: str, version: str) -> dict[str, Any]:
    """One kind's entries of a path table, with v1beta1's paths where they differ."""
    entries = table.get(kind, {})
    if version != V1BETA1:
        return entries
    renames = V1BETA1_PATHS.get(kind, {})
    out = {}
    for path, value in entries.items():
        renamed = renames.get(path, path)
        if renamed is not None:
            out[renamed] = value
    return out


def validations(kind: str, version: str = VERSION) -> dict[str, list[dict[str, str]]]:
    """The CEL rules of one kind and version, by schema path."""
    if version == V1BETA1 and kind in V1BETA1_VALIDATIONS:
        return V1BETA1_VALIDATIONS[kind]
    return VALIDATIONS.get(kind, {})


def kind_schema(kind: Kind, version: str = VERSION) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one kind at one version (v1beta2 unless told)."""
    schema = model_schema(kind.model_of(version))
    props = schema["properties"]
    props["apiVersion"] = string()
    props["kind"] = string()
    props["metadata"] = {"type": "object"}
    props.pop("status", None)
    status = kind.status_of(version)
    if status is not None:
        props["status"] = copy.deepcopy(status)
    required = [r for r in schema.get("required", []) if r not in ("apiVersion", "kind", "metadata")]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    for path, replacement in _table(REPLACEMENTS, kind.kind, version).items():
        parent, key = _node(schema, path, kind.kind)
        parent[key] = copy.deepcopy(replacement)
    constraints = {**_table(CONSTRAINTS, kind.kind, version),
                   **(V1BETA1_CONSTRAINTS.get(kind.kind, {}) if version == V1BETA1 else {})}
    for path, extra in constraints.items():
        node_at(schema, path, kind.kind).update(copy.deepcopy(extra))
    for path, value in _table(DEFAULTS, kind.kind, version).items():
        node_at(schema, path, kind.kind)["default"] = copy.deepcopy(value)
    for path, rules in validations(kind.kind, version).items():
        node_at(schema, path, kind.kind)["x-kubernetes-validations"] = copy.deepcopy(rules)
    if kind.description:
        schema["description"] = kind.description
    return schema


def _columns(kind: Kind, version: str) -> list[dict[str, Any]]:
    renames = V1BETA1_PATHS.get(kind.kind, {}) if version == V1BETA1 else {}
    out = []
    for column in kind.columns:
        field = column["jsonPath"].removeprefix(".")
        out.append({**column, "jsonPath": "." + (renames.get(field) or field)})
    return out


def conversion(namespace: str = webhook_names.NAMESPACE, service: str = webhook_names.SERVICE) -> dict[str, Any]:
    """The ``spec.conversion`` of a CRD the controller converts: its Service, with no CA bundle (the
    controller patches its own in, as upstream's cert controller does)."""
    return {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": {"name": service, "namespace": namespace,
                                         "path": webhook_names.CONVERT_PATH, "port": webhook_names.SERVICE_PORT}},
            "conversionReviewVersions": ["v1"],
        },
    }


def crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.singular,
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    versions = []
    for name in VERSIONS:
        version: dict[str, Any] = {
            "name": name,
            "served": True,
            "storage": name == VERSION,
            "schema": {"openAPIV3Schema": kind_schema(kind, name)},
        }
        if kind.columns:
            version["additionalPrinterColumns"] = _columns(kind, name)
        if kind.status is not None:
            version["subresources"] = {"status": {}}
        versions.append(version)
    spec: dict[str, Any] = {
        "group": GROUP,
        "names": names,
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "versions": versions,
    }
    if kind.conversion:
        spec["conversion"] = conversion()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.name, "labels": {"app.kubernetes.io/part-of": "pykueue"}},
        "spec": spec,
    }


def crds() -> list[dict[str, Any]]:
    """Every CRD, in a fixed order."""
    return [crd(kind) for kind in KINDS]


def to_yaml(documents: list[dict[str, Any]]) -> str:
    """A stable multi-document YAML rendering (keys sorted, long patterns kept on one line)."""
    return HEADER + yaml.safe_dump_all(
        documents, explicit_start=True, sort_keys=True, default_flow_style=False, width=1 << 16
    )


def file_name(document: dict[str, Any]) -> str:
    """``<group>_<plural>.yaml``, as upstream names its CRD files."""
    spec = document["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


# --- what the API server does with these schemas (for tests and, later, the controller) -------------------


def kind_named(kind: str) -> Kind:
    for k in KINDS:
        if k.kind == kind:
            return k
    raise KeyError(kind)


def schema_of(kind: str, version: str = VERSION) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the kind called ``kind`` (e.g. ``"Workload"``)."""
    return kind_schema(kind_named(kind), version)


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """``value`` as the API server stores it: nulls pruned, then ``default:`` filled in where absent,
    top down (so a defaulted ``{}`` gets its own fields' defaults too)."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            out = {k: v for k, v in value.items() if v is not None}
            for name, sub in props.items():
                if name not in out and "default" in sub:
                    out[name] = copy.deepcopy(sub["default"])
                if name in out:
                    out[name] = apply_defaults(sub, out[name])
            return out
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return {k: apply_defaults(values, v) for k, v in value.items()}
        return value
    if isinstance(value, list) and "items" in schema:
        return [apply_defaults(schema["items"], v) for v in value]
    return value
