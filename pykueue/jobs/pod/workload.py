"""The pod integration for one plain Pod: the Workload upstream's pod reconciler creates for a Pod with
the queue-name label (one pod set ``main`` of count 1, the Pod's spec as its template), built through
the Job integration's rules, which read the same labels (queue name, priority class, execution limit):
``pykueue.jobs.job.workload``, the one module of another kind the pod integration imports (the import
contract in ``pyproject.toml`` names it).

Also the Pods that a controller (a Deployment's ReplicaSet, a StatefulSet) creates from its pod
template after Kueue's webhook has marked that template (``pod_from_template``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework.workload import Manifest, workload_name_for_owner
from pykueue.jobs.job.workload import workload_from_job

FRAMEWORK = "pod"  # its name in the Configuration's integrations.frameworks
SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"  # the parent's framework name
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
GROUP_FAST_ADMISSION = "kueue.x-k8s.io/pod-group-fast-admission"
GROUP_SERVING = "kueue.x-k8s.io/pod-group-serving"


def workload_from_pod(pod: Mapping[str, Any]) -> Manifest:
    """The v1beta2 Workload for ``pod``; raises the Job integration's errors for a bad label."""
    meta = dict(pod.get("metadata") or {})
    as_job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
              "spec": {"parallelism": 1, "completions": 1, "template": {"spec": dict(pod.get("spec") or {})}}}
    built = workload_from_job(as_job)
    # upstream's name for a Pod's Workload: pod-<name>-<hash of Pod, its name and uid>
    built["metadata"]["name"] = workload_name_for_owner("Pod", "", meta.get("name", ""), meta.get("uid") or None)
    owner: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name", "")}
    if meta.get("uid"):
        owner["uid"] = meta["uid"]
    owner.update({"controller": True, "blockOwnerDeletion": True})
    built["metadata"]["ownerReferences"] = [owner]
    return built


def pod_from_template(
    parent: Mapping[str, Any], name: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> Manifest:
    """The Pod ``name`` that ``parent``'s controller creates from ``parent.spec.template``, with the
    labels and annotations Kueue's webhook put on that template (``labels``, ``annotations``) and
    the parent's creation time. The parent's ``pykueue.dev/*`` annotations travel along, so the
    Workload keeps them as it keeps a Job's."""
    meta = parent.get("metadata") or {}
    template = (parent.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {"name": name, "namespace": meta.get("namespace") or "default"}
    pod_labels = {**(template_meta.get("labels") or {}), **labels}
    pod_annotations = {
        **{k: v for k, v in (meta.get("annotations") or {}).items() if str(k).startswith("pykueue.dev/")},
        **(template_meta.get("annotations") or {}),
        **annotations,
    }
    if pod_labels:
        pod_meta["labels"] = pod_labels
    if pod_annotations:
        pod_meta["annotations"] = pod_annotations
    if meta.get("creationTimestamp") is not None:
        pod_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(dict(template.get("spec") or {}))}
