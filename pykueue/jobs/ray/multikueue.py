"""The RayCluster's and RayJob's MultiKueue adapters (upstream's ``raycluster_multikueue_adapter.go``,
``rayjob_multikueue_adapter.go``): KubeRay on the worker runs the copy; statuses are mirrored whole.
MultiKueue has no RayService adapter."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.multikueue import Adapter, Obj
from pykueue.kube import resources as r


def cluster_given_up(local: Mapping[str, Any]) -> Obj | None:
    """Reported suspended, as KubeRay reports a suspended cluster whose Pods are gone."""
    status = copy.deepcopy(local.get("status") or {})
    if status.get("state") in (None, "", "suspended"):
        return None
    status["state"] = "suspended"
    return status


def job_given_up(local: Mapping[str, Any]) -> Obj | None:
    """Reported Suspended, as KubeRay reports a suspended RayJob once its cluster is gone."""
    status = copy.deepcopy(local.get("status") or {})
    if status.get("jobDeploymentStatus") in (None, "", "New", "Suspended", "Complete", "Failed", "ValidationFailed"):
        return None
    status["jobDeploymentStatus"] = "Suspended"
    return status


RAY_CLUSTER = Adapter(r.RAY_CLUSTER, given_up=cluster_given_up)
RAY_JOB = Adapter(r.RAY_JOB, given_up=job_given_up)
