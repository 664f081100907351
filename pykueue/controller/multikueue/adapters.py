"""MultiKueue's adapters as the manager's workload reconciler (``multikueue.workloads``) reads them: each
kind's ``jobs.multikueue.Adapter`` (declared in its package, ``jobs/<kind>/multikueue.py``) from the
registry, which one a Workload's owner is, and a component Workload's next step (upstream's
``MultiKueueMultiWorkloadAdapter`` flow). Pure: the reconciler reads the caches and writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.jobs import registry
from pykueue.jobs.framework.workload import INDEX_ANNOTATION, OWNER_GVK_ANNOTATION, OWNER_NAME_ANNOTATION
from pykueue.jobs.multikueue import Adapter, prebuilt_workload
from pykueue.kube import resources as r

__all__ = ["ADAPTERS", "Adapter", "Component", "component_step", "for_owner", "index_of", "owner_of",
           "prebuilt_workload", "watched"]

# the kinds MultiKueue dispatches, in the registry's order
ADAPTERS: tuple[Adapter, ...] = tuple(i.multikueue for i in registry.INTEGRATIONS if i.multikueue is not None)


def for_owner(owner: Mapping[str, Any] | None) -> Adapter | None:
    """The adapter for a Workload's owner, None when MultiKueue has none for its kind."""
    if owner is None:
        return None
    return next((a for a in ADAPTERS if a.owns(owner)), None)


def owner_of(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner a Workload is dispatched for (upstream's wlReconciler.adapter): the job-owner
    annotations when they name a known kind (a LWS's groups, whose owner is no controller), else its
    controller, else its first owner."""
    meta = workload.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    gvk, name = annotations.get(OWNER_GVK_ANNOTATION), annotations.get(OWNER_NAME_ANNOTATION)
    adapter = next((a for a in ADAPTERS if gvk == _gvk_string(a.resource)), None)
    if adapter is not None and name:
        return {"apiVersion": adapter.resource.api_version, "kind": adapter.resource.kind, "name": name}
    refs = meta.get("ownerReferences") or []
    return next((o for o in refs if o.get("controller")), None) or next(iter(refs), None)


def _gvk_string(res: r.Resource) -> str:
    group, _, version = res.api_version.rpartition("/")
    return f"{group}/{version}, Kind={res.kind}"


def index_of(workload: Mapping[str, Any]) -> int:
    """Upstream's GetWorkloadIndex: the component index annotation, -1 when absent or not a number."""
    value = ((workload.get("metadata") or {}).get("annotations") or {}).get(INDEX_ANNOTATION)
    try:
        return int(str(value)) if value is not None else -1
    except ValueError:
        return -1


def watched(plurals: Mapping[str, Any]) -> list[r.Resource]:
    """The kinds to watch on a worker: those whose objects the manager caches (its integrations that are on)."""
    return [a.resource for a in ADAPTERS if a.resource.plural in plurals]


@dataclass(frozen=True, slots=True)
class Component:
    """What one of several Workloads of an object (a LWS's groups) does next: wait, follow its siblings
    to ``cluster``, or (the lowest index) nominate workers itself."""

    wait: bool = False
    cluster: str | None = None


def component_step(local: Mapping[str, Any], members: list[Mapping[str, Any]], expected: int) -> Component:
    """Upstream's nominateAndSynchronizeWorkers for a multi-workload adapter: every group's Workload
    must exist first; one a sibling was admitted for (``status.clusterName``) is followed there; else
    only the lowest index nominates. ``members`` are the Workloads of the same owner, ``local`` among
    them. Raises ValueError when siblings sit on different workers."""
    if len(members) < expected:
        return Component(wait=True)
    name = local["metadata"]["name"]
    others = [m for m in members if m["metadata"]["name"] != name]
    clusters = {c for m in others if (c := (m.get("status") or {}).get("clusterName"))}
    if len(clusters) > 1:
        raise ValueError(f"component workloads assigned to different clusters: {sorted(clusters)}")
    if clusters:
        return Component(cluster=clusters.pop())
    mine = index_of(local)
    if mine < 0 or any(0 <= index_of(m) < mine for m in others):
        return Component(wait=True)
    return Component()
