"""The Pod's MultiKueue adapter (upstream's ``pod_multikueue_adapter.go``): a plain Pod or every Pod of
a group goes to the worker; the manager's Pods stay gated (no managedBy: the pod integration holds them)
and mirror the worker's status (``mirrored``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.multikueue import Adapter, Obj, always_managed, whole_spec
from pykueue.jobs.pod.groups import GATE
from pykueue.kube import resources as r


def _gated(pod: Mapping[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def _scheduled(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)


def mirrored(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    """The remote Pod's status; a local Pod being deleted is left alone. While the worker's Pod is not
    scheduled, a local one still gated keeps its own PodScheduled condition (SchedulingGated: a copied
    Unschedulable would read as a scale-up candidate to the manager's autoscaler); once the worker's is
    scheduled its PodScheduled=True comes through, so the gated Pod shows it runs (upstream's spec
    "Should overwrite the manager Pod's SchedulingGated condition once it runs on the worker")."""
    if (local.get("metadata") or {}).get("deletionTimestamp"):
        return None
    status = copy.deepcopy(remote.get("status") or {})
    mine = _scheduled(local.get("status") or {})
    theirs = _scheduled(status)
    if _gated(local) and mine is not None and (theirs is None or theirs.get("status") != "True"):
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*conditions, copy.deepcopy(mine)]
    return status


ADAPTER = Adapter(r.POD, unmanaged=always_managed, spec=whole_spec, mirrored=mirrored, group_members=True)
