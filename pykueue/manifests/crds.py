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

Upstream's CEL rules (``x-kubernetes-validations``) are left out: ``pykueue.api.validation`` checks
them, and the controller's webhook will too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, get_args

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import Quantity
from pykueue.api.validation import (
    MAX_ADMISSION_CHECKS,
    MAX_COVERED_RESOURCES,
    MAX_FLAVOR_RESOURCES,
    MAX_FLAVOR_TOLERATIONS,
    MAX_FLAVORS,
    MAX_NODE_LABELS,
    MAX_NODE_TAINTS,
    MAX_POD_SETS,
    MAX_RESOURCE_GROUPS,
)

GROUP = "kueue.x-k8s.io"
# Only v1beta2 is served and stored for now. Serving v1beta1 as well needs a conversion webhook
# (``spec.conversion.strategy: Webhook``) that runs pykueue's v1beta1 -> v1beta2 conversion; that
# arrives with the controller. Until then v1beta1 objects are converted client side (``pykueue.api``).
VERSION = "v1beta2"

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
    "# Kueue's CustomResourceDefinitions (kueue.x-k8s.io/v1beta2), generated from pykueue's models\n"
    "# by `pykueue manifests crds` (or `python -m pykueue.manifests crds`). Do not edit.\n"
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
    "Workload": {"spec.active": True},
}


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
            _column("Cohort", ".spec.cohortName", "string", "The cohort the queue borrows and lends in"),
            _column("Strategy", ".spec.queueingStrategy", "string", "How pending workloads are ordered", 1),
            _column("Pending Workloads", ".status.pendingWorkloads", "integer", "Workloads waiting for quota"),
            _column("Admitted Workloads", ".status.admittedWorkloads", "integer",
                    "Admitted workloads that have not finished", 1),
        ),
        status=CLUSTER_QUEUE_STATUS,
        description="Quota per flavor and resource, and the policies workloads are admitted under.",
    ),
    Kind(
        "Cohort", "cohorts", v2.Cohort, status=COHORT_STATUS,
        description="A group of ClusterQueues (and Cohorts) that borrow unused quota from each other.",
    ),
    Kind(
        "WorkloadPriorityClass", "workloadpriorityclasses", v2.WorkloadPriorityClass,
        columns=(_column("Value", ".value", "integer", "The priority workloads of this class get"),),
        description="A priority for workloads that does not touch their pods' priority.",
    ),
    Kind(
        "AdmissionCheck", "admissionchecks", v2.AdmissionCheck, status=ADMISSION_CHECK_STATUS,
        description="A check a controller must pass before a workload with reserved quota is admitted.",
    ),
    Kind(
        "LocalQueue", "localqueues", v2.LocalQueue, namespaced=True, short_names=("queue", "queues", "lq"),
        columns=(
            _column("ClusterQueue", ".spec.clusterQueue", "string", "The ClusterQueue behind this queue"),
            _column("Pending Workloads", ".status.pendingWorkloads", "integer", "Workloads waiting for quota"),
            _column("Admitted Workloads", ".status.admittedWorkloads", "integer",
                    "Admitted workloads that have not finished"),
        ),
        status=LOCAL_QUEUE_STATUS,
        description="The namespaced queue users submit workloads to.",
    ),
    Kind(
        "Workload", "workloads", v2.Workload, namespaced=True, short_names=("wl",),
        columns=(
            _column("Queue", ".spec.queueName", "string", "The LocalQueue it was submitted to"),
            _column("Reserved in", ".status.admission.clusterQueue", "string",
                    "The ClusterQueue it reserves quota in"),
            _column("Admitted", ".status.conditions[?(@.type=='Admitted')].status", "string", "Whether it is admitted"),
            _column("Finished", ".status.conditions[?(@.type=='Finished')].status", "string", "Whether it finished"),
            _column("Age", ".metadata.creationTimestamp", "date", "When it was created"),
        ),
        status=WORKLOAD_STATUS,
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


def kind_schema(kind: Kind) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one kind."""
    schema = model_schema(kind.model)
    props = schema["properties"]
    props["apiVersion"] = string()
    props["kind"] = string()
    props["metadata"] = {"type": "object"}
    props.pop("status", None)
    if kind.status is not None:
        props["status"] = copy.deepcopy(kind.status)
    required = [r for r in schema.get("required", []) if r not in ("apiVersion", "kind", "metadata")]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    for path, replacement in REPLACEMENTS.get(kind.kind, {}).items():
        parent, key = _node(schema, path, kind.kind)
        parent[key] = copy.deepcopy(replacement)
    for path, extra in CONSTRAINTS.get(kind.kind, {}).items():
        node_at(schema, path, kind.kind).update(copy.deepcopy(extra))
    for path, value in DEFAULTS.get(kind.kind, {}).items():
        node_at(schema, path, kind.kind)["default"] = copy.deepcopy(value)
    if kind.description:
        schema["description"] = kind.description
    return schema


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
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": kind_schema(kind)},
    }
    if kind.columns:
        version["additionalPrinterColumns"] = [dict(c) for c in kind.columns]
    if kind.status is not None:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.name, "labels": {"app.kubernetes.io/part-of": "pykueue"}},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [version],
        },
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


def schema_of(kind: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the kind called ``kind`` (e.g. ``"Workload"``)."""
    return kind_schema(kind_named(kind))


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
