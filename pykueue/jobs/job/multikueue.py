"""The batch/v1 Job's MultiKueue adapter (upstream's ``job_multikueue_adapter.go``): the worker's Job
controller runs the copy; the manager's Job mirrors its status once unsuspended."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.multikueue import Adapter, Obj, spec_without_managed_by
from pykueue.kube import resources as r

JOB_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid",
                       "batch.kubernetes.io/job-name")


def spec(local: Mapping[str, Any]) -> Obj:
    """The manager's Job spec left to the worker's Job controller: without ``managedBy`` and without
    the selector and template labels the manager's API server added (the worker's makes its own)."""
    out = spec_without_managed_by(local)
    out.pop("selector", None)
    template_labels = ((out.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for label in JOB_TEMPLATE_LABELS:
        template_labels.pop(label, None)
    return out


def mirrored(local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    """The remote Job's status, once the manager's Job is no longer suspended (a suspended Job's
    status is not where it runs)."""
    if (local.get("spec") or {}).get("suspend"):
        return None
    return copy.deepcopy(remote.get("status") or {})


def given_up(local: Mapping[str, Any]) -> Obj | None:
    """Nothing running any more (no Job controller here would ever count its pods down). An
    unsuspended Job keeps its ``startTime``: the API server refuses its removal (the Job is
    suspended on eviction, and its status cleared then)."""
    status = local.get("status") or {}
    if not any(status.get(k) for k in ("active", "ready", "terminating")):
        return None
    kept = ("succeeded", "failed") if (local.get("spec") or {}).get("suspend") else ("succeeded", "failed", "startTime")
    return {k: v for k, v in status.items() if k in kept}


ADAPTER = Adapter(r.JOB, spec=spec, mirrored=mirrored, given_up=given_up)
