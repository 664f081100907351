"""Pods as the pod integration's unit tests take them: a queued Pod the webhook has gated, labelled and
finalized, and an admission for its Workload."""

from __future__ import annotations

from typing import Any

from pykueue.jobs.pod import groups as pods

FLAVORS = {"on-demand": {"metadata": {"name": "on-demand"}, "spec": {"nodeLabels": {"instance": "on-demand"}}}}
QUEUE = "kueue.x-k8s.io/queue-name"


def managed_pod(name: str = "p", *, cpu: str = "1", gated: bool = True, phase: str = "Pending",
                labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": pods.GATE}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {QUEUE: "lq", pods.MANAGED_LABEL: "true", **(labels or {})},
                         "annotations": dict(annotations or {}), "finalizers": [pods.FINALIZER]},
            "spec": spec, "status": {"phase": phase}}


ADMITTED = ({"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"})
ASSIGNED = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}}]}
