"""Kubernetes objects read as the plain dicts the API sends: a condition by type, whether it is True, and
a key escaped as one JSON-pointer segment (RFC 6901, for JSON patches of labels and annotations). One
place for what every kind, the controller and the kubectl verbs each used to write for themselves
(apimachinery's ``meta.FindStatusCondition`` and ``IsStatusConditionTrue``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def condition(obj: Mapping[str, Any] | None, kind: str) -> Any:
    """The condition of type ``kind`` in ``obj``'s ``status.conditions`` (the first), or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def is_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def pointer_segment(key: str) -> str:
    """``key`` as one JSON-pointer segment: ``~`` is ``~0`` and ``/`` is ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")
