"""The pod integration for one plain Pod: the Workload upstream's pod reconciler creates for a Pod with
the queue-name label (one pod set ``main`` of count 1, the Pod's spec as its template), built through
the Job integration's rules, which read the same labels (queue name, priority class, execution limit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs.batch import Manifest, workload_from_job

FRAMEWORK = "pod"  # its name in the Configuration's integrations.frameworks


def workload_from_pod(pod: Mapping[str, Any]) -> Manifest:
    """The v1beta2 Workload for ``pod``; raises the Job integration's errors for a bad label."""
    meta = dict(pod.get("metadata") or {})
    as_job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
              "spec": {"parallelism": 1, "completions": 1, "template": {"spec": dict(pod.get("spec") or {})}}}
    built = workload_from_job(as_job)
    owner: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name", "")}
    if meta.get("uid"):
        owner["uid"] = meta["uid"]
    owner.update({"controller": True, "blockOwnerDeletion": True})
    built["metadata"]["ownerReferences"] = [owner]
    return built
