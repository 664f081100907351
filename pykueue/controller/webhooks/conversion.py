"""The CRD conversion webhook's work: a stored object between ``kueue.x-k8s.io/v1beta1`` and ``v1beta2``.

The API server sends whole objects (metadata, status, fields pykueue does not model) and wants them back
with nothing changed but what the versions spell differently, so this works on the JSON as it comes
rather than through the models (which keep only what the engine reads, and quantities as numbers). The
field mapping is the API layer's (``pykueue.api.models.kueue_v1beta1``, after upstream's
``apis/kueue/v1beta1/*_conversion.go``); tests/e2e/test_webhooks.py checks that every v1beta1 example
reads the same through the loader before and after this conversion.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pykueue.api.kinds import KUEUE_V1BETA1, KUEUE_V1BETA2
from pykueue.api.models.kueue_v1beta1 import POD_PRIORITY_CLASS_SOURCE, WORKLOAD_PRIORITY_CLASS_SOURCE

WPC_REF = ("kueue.x-k8s.io", "WorkloadPriorityClass")
PC_REF = ("scheduling.k8s.io", "PriorityClass")
V1BETA1_FUNGIBILITY = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}  # v1beta2 dropped both
# Objects converted per ConversionReview: a bound on one request's CPU (about 70 us each, so some 0.35 s
# at most) that a 7 MiB body of tiny objects would otherwise pass some 18 times over. Clients list in pages
# (kubectl's --chunk-size and client-go's pager ask for 500), so a real list stays well below it.
MAX_OBJECTS = 5000
PAUSE_EVERY = 20  # objects converted between two calls of review's ``pause``


class ConversionError(ValueError):
    """An object this webhook cannot convert (an unknown version)."""


def _rename(obj: dict[str, Any] | None, old: str, new: str) -> None:
    if isinstance(obj, dict) and old in obj:
        value = obj.pop(old)
        obj.setdefault(new, value)


def _section(obj: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = obj.get(name)
    return value if isinstance(value, dict) else None


def to_v1beta2(obj: dict[str, Any]) -> None:
    """In place: a v1beta1 object's fields as v1beta2 spells them."""
    kind, spec, status = obj.get("kind"), _section(obj, "spec"), _section(obj, "status")
    if kind == "ClusterQueue" and spec is not None:
        _rename(spec, "cohort", "cohortName")
        checks = spec.pop("admissionChecks", None)
        if checks:  # a list of names: a strategy without onFlavors (it wins, as in the API layer)
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        fungibility = _section(spec, "flavorFungibility")
        for field in ("whenCanBorrow", "whenCanPreempt"):
            if fungibility is not None and fungibility.get(field) in V1BETA1_FUNGIBILITY:
                fungibility[field] = V1BETA1_FUNGIBILITY[fungibility[field]]
    elif kind == "Workload":
        if spec is not None:
            name = spec.pop("priorityClassName", None)
            source = spec.pop("priorityClassSource", None)
            if name:  # an empty source meant a pod PriorityClass before v1beta2 (see the API layer)
                group, ref_kind = WPC_REF if source == WORKLOAD_PRIORITY_CLASS_SOURCE else PC_REF
                spec["priorityClassRef"] = {"group": group, "kind": ref_kind, "name": name}
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    elif kind == "LocalQueue":
        _rename(status, "flavorUsage", "flavorsUsage")
    elif kind == "AdmissionCheck" and spec is not None:
        spec.pop("retryDelayMinutes", None)
    elif kind == "MultiKueueCluster" and spec is not None:
        # v1beta2 put the kubeconfig under clusterSource (upstream: only one with a location moves)
        source: dict[str, Any] = {}
        kube_config = spec.pop("kubeConfig", None)
        if isinstance(kube_config, dict) and kube_config.get("location"):
            source["kubeConfig"] = kube_config
        profile = spec.pop("clusterProfileRef", None)
        if profile is not None:
            source["clusterProfileRef"] = profile
        spec["clusterSource"] = source


def to_v1beta1(obj: dict[str, Any]) -> None:
    """In place: a v1beta2 object's fields as v1beta1 spells them."""
    kind, spec, status = obj.get("kind"), _section(obj, "spec"), _section(obj, "status")
    if kind == "ClusterQueue" and spec is not None:
        _rename(spec, "cohortName", "cohort")
    elif kind == "Workload":
        if spec is not None:
            ref = spec.pop("priorityClassRef", None)
            if isinstance(ref, dict) and ref.get("name"):
                pair = (ref.get("group"), ref.get("kind"))
                if pair in (WPC_REF, PC_REF):
                    spec["priorityClassName"] = ref["name"]
                    spec["priorityClassSource"] = (
                        WORKLOAD_PRIORITY_CLASS_SOURCE if pair == WPC_REF else POD_PRIORITY_CLASS_SOURCE)
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    elif kind == "LocalQueue":
        _rename(status, "flavorsUsage", "flavorUsage")
    elif kind == "MultiKueueCluster" and spec is not None:
        source = spec.pop("clusterSource", None)
        source = source if isinstance(source, dict) else {}
        spec["kubeConfig"] = source.get("kubeConfig") or {"location": "", "locationType": ""}
        if source.get("clusterProfileRef") is not None:
            spec["clusterProfileRef"] = source["clusterProfileRef"]


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """A copy of ``obj`` at apiVersion ``desired``; ``ConversionError`` for a version pair it does not know."""
    source = obj.get("apiVersion")
    out = copy.deepcopy(obj)
    if source == desired:
        return out
    if (source, desired) == (KUEUE_V1BETA1, KUEUE_V1BETA2):
        to_v1beta2(out)
    elif (source, desired) == (KUEUE_V1BETA2, KUEUE_V1BETA1):
        to_v1beta1(out)
    else:
        raise ConversionError(f'cannot convert {obj.get("kind")} from "{source}" to "{desired}"')
    out["apiVersion"] = desired
    return out


def review(request: dict[str, Any], pause: Callable[[], None] | None = None) -> dict[str, Any]:
    """A ConversionReview's response for its request: every object converted, or a Failure for all.
    ``pause`` is called every ``PAUSE_EVERY`` objects (the webhook server lets its event loop run
    there: this runs on a worker thread, and a long pure-Python loop would hold the GIL)."""
    desired = request.get("desiredAPIVersion", "")
    objects = request.get("objects") or []
    if len(objects) > MAX_OBJECTS:
        return {"uid": request.get("uid", ""), "result": {"status": "Failure", "message": (
            f"a ConversionReview of {len(objects)} objects: at most {MAX_OBJECTS} are converted per request "
            "(list in pages, e.g. kubectl --chunk-size)")}}
    try:
        converted = []
        for i, obj in enumerate(objects, 1):
            converted.append(convert(obj, desired))
            if pause is not None and i % PAUSE_EVERY == 0:
                pause()
    except ConversionError as exc:
        return {"uid": request.get("uid", ""), "result": {"status": "Failure", "message": str(exc)}}
    return {"uid": request.get("uid", ""), "convertedObjects": converted, "result": {"status": "Success"}}
