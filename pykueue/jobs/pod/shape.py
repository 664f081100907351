"""A pod spec's shape: the fields upstream's ``utilpod.SpecShape`` reads, the role hash over them, and
the rule that keeps them fixed for a pod group Kueue manages.

The shape is what admission depends on: each container's (and init container's) ``resources.requests``
and ``ports``, and the spec's ``nodeSelector``, ``affinity``, ``tolerations``, ``runtimeClassName``,
``priority``, ``topologySpreadConstraints``, ``overhead`` and ``resourceClaims``. Container names,
images and limits are not in it, so Pods that differ only there share a role.

The role hash is the first 8 hex digits of the SHA-256 of ``{"spec": shape}`` as Go's
``encoding/json`` writes it; a pod group's pod sets are named with it, so the bytes must be Go's:
map keys sorted, no spaces, ``null`` for what is unset, quantities in canonical form, a struct's
fields in its declaration order (``k8s.io/api/core/v1``'s types), what ``omitempty`` leaves out left
out, a field Go does not know dropped, and a missing field Go always writes written as its zero value.
So a hand-written manifest (the simulator reads those) hashes as the object the API server stores,
whatever order its keys were written in. ``_STRUCTS`` holds each struct the shape reaches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from pykueue.jobs import generic_update
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.quantity import format_binary, format_decimal, parse_quantity

_EMPTY: tuple[Any, ...] = (None, {}, [])

# A struct field: (json name, how Go writes it, the struct a nested value is). How: "s" and "i" a string or
# int32 always written ("" or 0 when missing); "s?" and "i?" the same under omitempty (left out when empty);
# "p" a pointer (omitempty: left out when missing or null, written even when zero); "m" a map of strings
# (omitempty, keys sorted); "l?" a list (omitempty) and "l" one always written (null when missing); "o?" a
# pointer to a struct (omitempty) and "o" a struct value (always written).
_Field = tuple[str, str, str]
_SELECTOR_REQUIREMENT: tuple[_Field, ...] = (("key", "s", ""), ("operator", "s", ""), ("values", "l?", ""))
_NODE_SELECTOR_TERM: tuple[_Field, ...] = (
    ("matchExpressions", "l?", "SelectorRequirement"), ("matchFields", "l?", "SelectorRequirement"))
_POD_AFFINITY: tuple[_Field, ...] = (
    ("requiredDuringSchedulingIgnoredDuringExecution", "l?", "PodAffinityTerm"),
    ("preferredDuringSchedulingIgnoredDuringExecution", "l?", "WeightedPodAffinityTerm"))
_STRUCTS: dict[str, tuple[_Field, ...]] = {
    "Affinity": (("nodeAffinity", "o?", "NodeAffinity"), ("podAffinity", "o?", "PodAffinity"),
                 ("podAntiAffinity", "o?", "PodAffinity")),
    "NodeAffinity": (("requiredDuringSchedulingIgnoredDuringExecution", "o?", "NodeSelector"),
                     ("preferredDuringSchedulingIgnoredDuringExecution", "l?", "PreferredSchedulingTerm")),
    "NodeSelector": (("nodeSelectorTerms", "l", "NodeSelectorTerm"),),
    "NodeSelectorTerm": _NODE_SELECTOR_TERM,
    "SelectorRequirement": _SELECTOR_REQUIREMENT,  # NodeSelectorRequirement and LabelSelectorRequirement
    "PreferredSchedulingTerm": (("weight", "i", ""), ("preference", "o", "NodeSelectorTerm")),
    "PodAffinity": _POD_AFFINITY,  # PodAntiAffinity has the same fields
    "PodAffinityTerm": (("labelSelector", "o?", "LabelSelector"), ("namespaces", "l?", ""), ("topologyKey", "s", ""),
                        ("namespaceSelector", "o?", "LabelSelector"), ("matchLabelKeys", "l?", ""),
                        ("mismatchLabelKeys", "l?", "")),
    "WeightedPodAffinityTerm": (("weight", "i", ""), ("podAffinityTerm", "o", "PodAffinityTerm")),
    "LabelSelector": (("matchLabels", "m", ""), ("matchExpressions", "l?", "SelectorRequirement")),
    "Toleration": (("key", "s?", ""), ("operator", "s?", ""), ("value", "s?", ""), ("effect", "s?", ""),
                   ("tolerationSeconds", "p", "")),
    "TopologySpreadConstraint": (("maxSkew", "i", ""), ("topologyKey", "s", ""), ("whenUnsatisfiable", "s", ""),
                                 ("labelSelector", "o?", "LabelSelector"), ("minDomains", "p", ""),
                                 ("nodeAffinityPolicy", "p", ""), ("nodeTaintsPolicy", "p", ""),
                                 ("matchLabelKeys", "l?", "")),
    "PodResourceClaim": (("name", "s", ""), ("resourceClaimName", "p", ""), ("resourceClaimTemplateName", "p", "")),
    "ContainerPort": (("name", "s?", ""), ("hostPort", "i?", ""), ("containerPort", "i", ""), ("protocol", "s?", ""),
                      ("hostIP", "s?", "")),
}
_ZERO = {"s": "", "i": 0}


def _go_value(value: Any, how: str, struct: str) -> Any:
    """One field's value as Go writes it (``_STRUCTS``' notation)."""
    if how in ("o", "o?"):
        return _go_struct(value, struct)
    if how in ("l", "l?"):
        if not isinstance(value, list):
            return value
        return [_go_struct(v, struct) for v in value] if struct else value
    if how == "m" and isinstance(value, Mapping):
        return dict(sorted(value.items()))
    return value


def _go_struct(item: Any, struct: str) -> Any:
    """``item`` as Go's ``json.Marshal`` writes the struct ``struct``: fields in declaration order, what
    omitempty omits left out, unknown keys dropped (a value that is not an object is left as it is)."""
    if not isinstance(item, Mapping):
        return item
    out: dict[str, Any] = {}
    for name, how, sub in _STRUCTS[struct]:
        value = item.get(name)
        omitempty = how.endswith("?") or how in ("p", "m")
        if value is None and not omitempty:
            out[name] = None if how == "l" else _go_struct({}, sub) if how == "o" else _ZERO[how]
        elif value is None or (omitempty and how != "p" and how != "o?" and value in ("", 0, [], {})):
            continue
        else:
            out[name] = _go_value(value, how.rstrip("?"), sub)
    return out


def _go_list(items: Any, struct: str) -> Any:
    """A top-level list of ``struct`` (omitempty on the pod spec, so an empty one is null)."""
    if items in _EMPTY:
        return None
    return [_go_struct(i, struct) for i in items] if isinstance(items, list) else items


_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _quantity(value: Any) -> str:
    """``resource.Quantity``'s JSON: its canonical string in the format the input was written in."""
    try:
        amount = parse_quantity(value)
    except ValueError:
        return str(value)
    text = value if isinstance(value, str) else ""
    if text.endswith(_BINARY_SUFFIXES) and amount.denominator == 1:
        return format_binary(amount.numerator)
    if "e" in text.lower() and amount.denominator == 1 and amount != 0:
        mantissa, exponent = amount.numerator, 0
        while mantissa % 1000 == 0:
            mantissa //= 1000
            exponent += 3
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return format_decimal(Fraction(amount))


def _resource_list(values: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not values:
        return None  # omitempty: the API server stores an empty list as none
    return {name: _quantity(values[name]) for name in sorted(values)}


def _containers(items: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    shaped = [{"ports": _go_list(c.get("ports"), "ContainerPort"),
               "resources": {"requests": _resource_list((c.get("resources") or {}).get("requests"))}}
              for c in items or []]
    return shaped or None


def _empty_to_none(value: Any) -> Any:
    return None if value in ({}, []) else value


def spec_shape(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's ``SpecShape``: what admission reads of a pod spec, keyed as Go keys it."""
    return {
        "affinity": None if pod_spec.get("affinity") is None else _go_struct(pod_spec["affinity"], "Affinity"),
        "containers": _containers(pod_spec.get("containers")),
        "initContainers": _containers(pod_spec.get("initContainers")),
        "nodeSelector": _empty_to_none(pod_spec.get("nodeSelector")),
        "overhead": _resource_list(pod_spec.get("overhead")),
        "priority": pod_spec.get("priority"),
        "resourceClaims": _go_list(pod_spec.get("resourceClaims"), "PodResourceClaim"),
        "runtimeClassName": pod_spec.get("runtimeClassName"),
        "tolerations": _go_list(pod_spec.get("tolerations"), "Toleration"),
        "topologySpreadConstraints": _go_list(pod_spec.get("topologySpreadConstraints"), "TopologySpreadConstraint"),
    }


def _go_json(value: Any) -> str:
    """``json.Marshal`` of ``value``: maps (here, every dict that is a Go map) with sorted keys, structs
    in the order given, no spaces, and Go's HTML-safe escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _sorted_maps(shape: Mapping[str, Any]) -> dict[str, Any]:
    """The shape with its Go maps' keys sorted (the shape itself, node selector; the resource lists
    and container entries are built sorted); structs keep their own order."""
    out = dict(sorted(shape.items()))
    if isinstance(out.get("nodeSelector"), Mapping):
        out["nodeSelector"] = dict(sorted(out["nodeSelector"].items()))
    return out


def role_hash(pod_spec: Mapping[str, Any]) -> str:
    """Upstream's ``GenerateRoleHash``: Pods of one shape share a role, and so a pod set."""
    encoded = _go_json({"spec": _sorted_maps(spec_shape(pod_spec))})
    return hashlib.sha256(encoded.encode()).hexdigest()[:8]


def _shape_errors(new: Any, old: Any, path: str, descend: bool) -> list[JobConversionError]:
    if descend and isinstance(new, dict) and isinstance(old, dict):
        out: list[JobConversionError] = []
        for key in sorted(set(new) | set(old)):
            # only the shape's own maps are walked (containers' entries, their "resources");
            # a value such as a node selector or a request list is compared whole, as upstream does
            out += _shape_errors(new.get(key), old.get(key), f"{path}.{key}", key in ("resources",))
        return out
    if descend and isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        out = []
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            out += _shape_errors(a, b, f"{path}[{i}]", True)
        return out
    if new in _EMPTY and old in _EMPTY:
        return []  # apimachinery's semantic equality: an empty list or map is an unset one
    return generic_update.immutable(path, new, old)


def immutable_shape_errors(new_spec: Mapping[str, Any], old_spec: Mapping[str, Any],
                           path: str) -> list[JobConversionError]:
    """Upstream's ``ValidateImmutablePodGroupPodSpec``: each shape field of the new pod spec equals the
    old one (containers compared one by one when their number is unchanged)."""
    new, old = spec_shape(new_spec), spec_shape(old_spec)
    out: list[JobConversionError] = []
    for key in sorted(set(new) | set(old)):
        out += _shape_errors(new.get(key), old.get(key), f"{path}.{key}", key in ("containers", "initContainers"))
    return out
