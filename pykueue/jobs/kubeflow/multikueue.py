"""A Kubeflow job's MultiKueue adapter (upstream's ``kubeflowjob_multikueue_adapter.go`` and
``mpijob_multikueue_adapter.go``): the manager hands over only a job whose ``spec.runPolicy.managedBy``
is MultiKueue's; the worker's copy has it dropped, so the worker's operator runs it; its status is
mirrored whole. Once the remote copies are given up, no replica shows active Pods (no operator on the
manager counts them down)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.engine import multikueue as mk
from pykueue.jobs.kubeflow import workload
from pykueue.jobs.multikueue import Adapter, Obj
from pykueue.kube.resources import Resource

MANAGED_BY_FIELD = "spec.runPolicy.managedBy"


def unmanaged(local: Mapping[str, Any]) -> str | None:
    """``IsJobManagedByKueue``: why the manager may not hand it over, or None."""
    return mk.managed_by_reason(str(workload.run_policy(local).get("managedBy") or ""), MANAGED_BY_FIELD)


def spec(local: Mapping[str, Any]) -> Obj:
    """The spec the worker gets: the manager's, ``runPolicy.managedBy`` cleared."""
    out = copy.deepcopy(local.get("spec") or {})
    policy = out.get("runPolicy")
    if isinstance(policy, dict):
        policy.pop("managedBy", None)
    return out


def given_up(local: Mapping[str, Any]) -> Obj | None:
    """No replica type active any longer (None: none was)."""
    status = copy.deepcopy(local.get("status") or {})
    rows = status.get("replicaStatuses")
    if not isinstance(rows, dict) or not any((row or {}).get("active") for row in rows.values()):
        return None
    for row in rows.values():
        if isinstance(row, dict):
            row["active"] = 0
    return status


def adapter(resource: Resource) -> Adapter:
    return Adapter(resource, unmanaged=unmanaged, spec=spec, given_up=given_up)
