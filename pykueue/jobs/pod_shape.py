"""A pod spec's shape: the fields upstream's ``utilpod.SpecShape`` reads, the role hash over them, and
the rule that keeps them fixed for a pod group Kueue manages.

The shape is what admission depends on: each container's (and init container's) ``resources.requests``
and ``ports``, and the spec's ``nodeSelector``, ``affinity``, ``tolerations``, ``runtimeClassName``,
``priority``, ``topologySpreadConstraints``, ``overhead`` and ``resourceClaims``. Container names,
images and limits are not in it, so Pods that differ only there share a role.

The role hash is the first 8 hex digits of the SHA-256 of ``{"spec": shape}`` as Go's
``encoding/json`` writes it; a pod group's pod sets are named with it, so the bytes must be Go's:
map keys sorted, no spaces, ``null`` for what is unset, quantities in canonical form, a struct's
fields in its declaration order. Objects read from the API server already list a struct's fields in
that order; tolerations and ports (the structs a manifest most often spells by hand) are put in it here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from pykueue.jobs import generic_update
from pykueue.jobs.batch import JobConversionError
from pykueue.quantity import format_binary, format_decimal, parse_quantity

_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")  # all omitempty
_PORT_FIELDS = ("name", "hostPort", "containerPort", "protocol", "hostIP")  # containerPort is not omitempty
_EMPTY: tuple[Any, ...] = (None, {}, [])
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
    if values is None:
        return None
    return {name: _quantity(values[name]) for name in sorted(values)}


def _ordered(item: Mapping[str, Any], fields: tuple[str, ...], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """A struct in Go's field order, its empty omitempty fields left out (fields in ``keep`` stay;
    a zero ``hostPort`` is empty, a zero ``tolerationSeconds`` is a set pointer)."""
    def empty(key: str, value: Any) -> bool:
        return value is None or value == "" or (key == "hostPort" and value == 0)

    out = {k: item[k] for k in fields if k in item and (k in keep or not empty(k, item[k]))}
    out.update({k: v for k, v in item.items() if k not in fields})
    return out


def _list(items: Iterable[Mapping[str, Any]] | None, fields: tuple[str, ...],
          keep: tuple[str, ...] = ()) -> list[dict[str, Any]] | None:
    items = list(items or [])
    return [_ordered(i, fields, keep) for i in items] if items else None


def _containers(items: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    shaped = [{"ports": _list(c.get("ports"), _PORT_FIELDS, ("containerPort",)),
               "resources": {"requests": _resource_list((c.get("resources") or {}).get("requests"))}}
              for c in items or []]
    return shaped or None


def _empty_to_none(value: Any) -> Any:
    return None if value in ({}, []) else value


def spec_shape(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's ``SpecShape``: what admission reads of a pod spec, keyed as Go keys it."""
    return {
        "affinity": pod_spec.get("affinity"),
        "containers": _containers(pod_spec.get("containers")),
        "initContainers": _containers(pod_spec.get("initContainers")),
        "nodeSelector": _empty_to_none(pod_spec.get("nodeSelector")),
        "overhead": _resource_list(pod_spec.get("overhead")),
        "priority": pod_spec.get("priority"),
        "resourceClaims": _empty_to_none(pod_spec.get("resourceClaims")),
        "runtimeClassName": pod_spec.get("runtimeClassName"),
        "tolerations": _list(pod_spec.get("tolerations"), _TOLERATION_FIELDS),
        "topologySpreadConstraints": _empty_to_none(pod_spec.get("topologySpreadConstraints")),
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
