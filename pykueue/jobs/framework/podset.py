"""PodSetInfo: what an admission injects into a pod set's template and what is restored when the job
stops, shared by every kind. A PodSetInfo is a plain dict::

    {"name": "main", "count": 3 or None, "annotations": {...}, "labels": {...},
     "nodeSelector": {...}, "tolerations": [...], "schedulingGates": [...]}

``pod_set_info_from_flavors`` (what the admitted flavors inject), ``pod_set_info_from_pod_set`` (what a
Workload's pod set records of the template before admission, for the restore), ``merge_pod_set_info``
(an admission check's ``podSetUpdates`` folded in), and on a pod template ``inject_into_template``,
``restore_template`` and ``merge_template``. Upstream's counterpart: ``pkg/podset/podset.go``
(``PodSetInfo``, ``FromAssignment``, ``FromPodSet``, ``Merge``, ``RestorePodSpec``) and
``pkg/controller/jobframework``'s ``getPodSetsInfoFromStatus``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs.framework.workload import (
    DEFAULT_POD_SET_NAME,
    MANAGED_LABELS,
    POD_SET_LABEL,
    annotations_of,
    labels_of,
    meta_of,
)


class PodSetInfoError(ValueError):
    """Upstream's permanent start errors (``podset.IsPermanent``): the Workload fails to start."""


class PodSetMergeError(PodSetInfoError):
    """An admission would set a template key that already holds a different value."""

    def __init__(self, field: str, key: str, existing: str, new: str) -> None:
        super().__init__(
            f"invalid admission check PodSetUpdate: conflict for {field}: "
            f"conflict for key={key}, value1={existing}, value2={new}"
        )
        self.field = field
        self.key = key
        self.existing = existing
        self.new = new


def _empty_info(name: str, count: int | None) -> dict[str, Any]:
    return {
        "name": name,
        "count": count,
        "annotations": {},
        "labels": {},
        "nodeSelector": {},
        "tolerations": [],
        "schedulingGates": [],
    }


def pod_set_info_from_flavors(
    flavors: Sequence[Mapping[str, Any]], *, name: str = DEFAULT_POD_SET_NAME, count: int | None = None
) -> dict[str, Any]:
    """What an admission with these ResourceFlavors injects into the pod set ``name``.

    ``podset.FromAssignment`` plus the ``kueue.x-k8s.io/podset`` label the reconciler always
    adds: each flavor (once per name, in the given order) contributes its ``spec.nodeLabels``
    to the nodeSelector (a later flavor wins a shared key) and appends its ``spec.tolerations``.
    ``count`` is the assignment's pod count; None means the pod set's full count.
    """
    info = _empty_info(name, count)
    info["labels"][POD_SET_LABEL] = name
    seen: set[str] = set()
    for flavor in flavors:
        flavor_name = meta_of(flavor).get("name")
        if flavor_name in seen:
            continue
        seen.add(flavor_name)
        flavor_spec = flavor.get("spec") or {}
        info["nodeSelector"].update(flavor_spec.get("nodeLabels") or {})
        info["tolerations"].extend(copy.deepcopy(list(flavor_spec.get("tolerations") or [])))
    return info


def pod_set_info_from_pod_set(pod_set: Mapping[str, Any]) -> dict[str, Any]:
    """``podset.FromPodSet``: what a Workload pod set records of the Job before admission."""
    template = pod_set.get("template") or {}
    spec = template.get("spec") or {}
    info = _empty_info(pod_set.get("name", DEFAULT_POD_SET_NAME), pod_set.get("count"))
    info["annotations"] = dict(annotations_of(template))
    info["labels"] = dict(labels_of(template))
    info["nodeSelector"] = dict(spec.get("nodeSelector") or {})
    info["tolerations"] = copy.deepcopy(list(spec.get("tolerations") or []))
    info["schedulingGates"] = copy.deepcopy(list(spec.get("schedulingGates") or []))
    return info


def _struct_key(item: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Go struct equality for tolerations and gates: an unset field equals its zero value."""
    return tuple(sorted((k, v) for k, v in item.items() if v not in (None, "")))


def _merge_map(field: str, target: dict[str, str], update: Mapping[str, str] | None) -> None:
    for key, value in (update or {}).items():
        if key in target and target[key] != value:
            raise PodSetMergeError(field, key, target[key], value)
    target.update(update or {})


def _append_missing(target: list[Any], update: Sequence[Mapping[str, Any]] | None) -> None:
    """Append what ``target`` lacks, as upstream's ``slices.Index == -1`` test does."""
    present = [_struct_key(item) for item in target]
    for item in update or []:
        if _struct_key(item) not in present:
            target.append(copy.deepcopy(item))
            present.append(_struct_key(item))


def merge_pod_set_info(info: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``PodSetInfo.Merge``: fold an admission check's podSetUpdate into an info.

    Maps must agree on shared keys (else ``PodSetMergeError``); tolerations and scheduling
    gates are appended without duplicates. Returns a new info.
    """
    merged = copy.deepcopy(dict(info))
    for field in ("annotations", "labels", "nodeSelector"):
        merged[field] = dict(merged.get(field) or {})
        _merge_map(field, merged[field], update.get(field))
    merged["tolerations"] = list(merged.get("tolerations") or [])
    _append_missing(merged["tolerations"], update.get("tolerations"))
    merged["schedulingGates"] = list(merged.get("schedulingGates") or [])
    _append_missing(merged["schedulingGates"], update.get("schedulingGates"))
    return merged


def _set_or_drop(obj: dict[str, Any], key: str, value: Any) -> None:
    """Kubernetes omits empty maps and lists, so an empty value means the key is absent."""
    if value:
        obj[key] = copy.deepcopy(value)
    else:
        obj.pop(key, None)


def inject_into_template(template: dict[str, Any], info: Mapping[str, Any]) -> None:
    """Upstream's ``podset.Merge`` on a pod template, in place: the info's labels, annotations and
    nodeSelector merged into it (a key already set to another value raises ``PodSetMergeError``),
    tolerations and scheduling gates appended without duplicates."""
    pod_spec = template.setdefault("spec", {})
    metadata = dict(template.get("metadata") or {})
    current = {
        "annotations": dict(metadata.get("annotations") or {}),
        "labels": dict(metadata.get("labels") or {}),
        "nodeSelector": dict(pod_spec.get("nodeSelector") or {}),
        "tolerations": list(pod_spec.get("tolerations") or []),
        "schedulingGates": list(pod_spec.get("schedulingGates") or []),
    }
    merged = merge_pod_set_info(current, info)
    _set_or_drop(metadata, "annotations", merged["annotations"])
    _set_or_drop(metadata, "labels", merged["labels"])
    if metadata:
        template["metadata"] = metadata
    _set_or_drop(pod_spec, "nodeSelector", merged["nodeSelector"])
    _set_or_drop(pod_spec, "tolerations", merged["tolerations"])
    _set_or_drop(pod_spec, "schedulingGates", merged["schedulingGates"])


def restore_template(template: dict[str, Any], original_info: Mapping[str, Any]) -> None:
    """Upstream's ``podset.RestorePodSpec`` on a pod template, in place: its labels, annotations,
    nodeSelector, tolerations and scheduling gates become the info's, except that the Job controller's
    own labels (``MANAGED_LABELS``: ``job-name``...) stay."""
    pod_spec = template.setdefault("spec", {})
    metadata = dict(template.get("metadata") or {})
    labels = dict(original_info.get("labels") or {})
    for key in MANAGED_LABELS:
        if key in (metadata.get("labels") or {}):
            labels[key] = metadata["labels"][key]
    _set_or_drop(metadata, "annotations", original_info.get("annotations"))
    _set_or_drop(metadata, "labels", labels)
    if metadata:
        template["metadata"] = metadata
    else:
        template.pop("metadata", None)
    _set_or_drop(pod_spec, "nodeSelector", original_info.get("nodeSelector"))
    _set_or_drop(pod_spec, "tolerations", original_info.get("tolerations"))
    _set_or_drop(pod_spec, "schedulingGates", original_info.get("schedulingGates"))


def merge_template(template: dict[str, Any], info: Mapping[str, Any], restore: bool) -> dict[str, Any]:
    """Upstream's ``podset.Merge`` (or ``RestorePodSpec``) on one pod template of any kind, as the Job's
    own template is merged (``inject_into_template``, ``restore_template``). Returns a new template."""
    new = copy.deepcopy(template)
    (restore_template if restore else inject_into_template)(new, info)
    return new
