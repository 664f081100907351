"""The base of every boundary model, and the translation of pydantic errors into Kubernetes field errors.

Models are strict (no silent type coercion, as in Kubernetes' JSON decoding) and forbid unknown fields
(as a server in strict field-validation mode does), so a typo is an error rather than a dropped field.
Field names are snake_case in Python and camelCase on the wire.
"""

from __future__ import annotations

import difflib
import types
from fractions import Fraction
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError
from pydantic.alias_generators import to_camel

from pykueue.quantity import parse_quantity


class ApiModel(BaseModel):
    """Strict, closed, camelCase model: the shape of one Kubernetes API struct."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=False,
        arbitrary_types_allowed=True,
        hide_input_in_errors=True,
        defer_build=True,
    )


def _quantity(value: object) -> Fraction:
    return parse_quantity(value)


Quantity = Annotated[Fraction, PlainValidator(_quantity)]
"""A resource quantity, read exactly (see ``pykueue.quantity``)."""

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
PositiveInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]


# --- pydantic errors -> (field path, message) ------------------------------------------------------------


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` down to the type that shapes the next path element."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return Any
            tp = args[0]
        else:
            return tp


def _field_type(model: type[BaseModel], alias: object) -> Any:
    for name, info in model.model_fields.items():
        if info.alias == alias or (info.alias is None and name == alias):
            return info.annotation
    return Any


def loc_to_path(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """``('spec', 'resourceGroups', 0, 'flavors')`` -> ``spec.resourceGroups[0].flavors``.

    The model's structure says whether an element is a field, a list index or a map key (``[key]``),
    so map keys that look like field names are still printed as keys.
    """
    out = ""
    tp: Any = root
    i = 0
    while i < len(loc):
        elem = loc[i]
        tp = _unwrap(tp)
        origin = get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            out += f".{elem}" if out else str(elem)
            tp = _field_type(tp, elem)
        elif origin in (list, tuple):
            out += f"[{elem}]"
            tp = get_args(tp)[0] if get_args(tp) else Any
        elif origin is dict:
            out += f"[{elem}]"
            if i + 1 < len(loc) and loc[i + 1] == "[key]":
                i += 1
            tp = get_args(tp)[1] if get_args(tp) else Any
        elif isinstance(elem, int):
            out += f"[{elem}]"
            tp = Any
        else:
            out += f".{elem}" if out else str(elem)
            tp = Any
        i += 1
    return out


_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "a boolean",
    "float_type": "a number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _yaml_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _message(error: dict[str, Any], value: object) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "Required value"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}, got {_yaml_type(value)}"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace(" or ", ", ").replace("'", '"')
        return f"Unsupported value: {_show(value)}: supported values: {expected}"
    if kind == "greater_than_equal":
        return f"must be greater than or equal to {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be less than or equal to {ctx.get('le')}"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return str(error["msg"])


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _value_at(data: object, loc: tuple[int | str, ...]) -> object:
    cur = data
    for elem in loc:
        if elem == "[key]":
            return None
        if isinstance(cur, dict):
            cur = cur.get(elem)
        elif isinstance(cur, list) and isinstance(elem, int) and 0 <= elem < len(cur):
            cur = cur[elem]
        else:
            return None
    return cur


# Fields people write for another one, from other APIs or older versions of Kueue's: an unknown field
# of this name gets the hint when the model at that place has the suggested field.
COMMON_MISTAKES = {
    "nodeSelector": "nodeLabels",  # ResourceFlavor: a Pod's word for what a flavor calls nodeLabels
    "taints": "nodeTaints",
    "cohort": "cohortName",  # ClusterQueue: v1beta1's name, renamed in v1beta2
    "parent": "parentName",  # Cohort
    "admissionChecks": "admissionChecksStrategy",  # ClusterQueue: v1beta1's list, v1beta2 has the strategy only
    "clusterQueueName": "clusterQueue",  # LocalQueue
    "queue": "queueName",  # Workload
    "localQueue": "queueName",
    "quota": "nominalQuota",  # ClusterQueue resources
    "nominal": "nominalQuota",
    "limit": "borrowingLimit",
}
_TYPO_CUTOFF = 0.8  # difflib ratio for a field name that is probably a misspelling of a known one


def _type_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The declared type of the value at ``loc`` (``Any`` where the model does not say)."""
    tp: Any = root
    for elem in loc:
        tp = _unwrap(tp)
        origin = get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            tp = _field_type(tp, elem)
        elif origin in (list, tuple, dict):
            args = get_args(tp)
            tp = (args[-1] if args else Any) if elem != "[key]" else Any
        else:
            return Any
    return _unwrap(tp)


def _field_names(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def unknown_field_hint(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """``; did you mean spec.nodeLabels?`` for an unknown field at ``loc`` that is a known mistake or
    a near-miss of a field of the same object, else empty."""
    wrong = loc[-1]
    if not isinstance(wrong, str):
        return ""
    places = [loc[:-1]]
    if len(loc) == 1:  # a spec field written at the top of the object, one level too far out
        places.append(("spec",))
    for place in places:
        parent = _type_at(root, place)
        if not (isinstance(parent, type) and issubclass(parent, BaseModel)):
            continue
        known = _field_names(parent)
        meant = COMMON_MISTAKES.get(wrong)
        if meant not in known:
            close = difflib.get_close_matches(wrong, known, n=1, cutoff=_TYPO_CUTOFF)
            close = close or [k for k in known if k.lower() == wrong.lower()]
            meant = close[0] if close else None
        if meant is not None:
            return f"; did you mean {loc_to_path(root, (*place, meant))}?"
    return ""


def validation_errors(root: type[BaseModel], data: object, exc: ValidationError) -> list[tuple[str, str]]:
    """Every error of a failed ``model_validate`` as ``(field path, message)``, in pydantic's order."""
    out = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = tuple(error["loc"])
        path = loc_to_path(root, loc)
        message = _message(error, _value_at(data, loc))
        if error["type"] == "extra_forbidden" and loc:
            message = f'unknown field "{loc[-1]}"{unknown_field_hint(root, loc)}'
        out.append((path or "<document>", message))
    return out
