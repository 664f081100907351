"""Pods, pod groups, Deployments and StatefulSets in the e2e tests (the controller with the pod
integrations on is conftest's ``pod_kueue``): Pod manifests, and readers of a Pod's gate, node and
Workload."""

from __future__ import annotations

import json
from typing import Any

from pykueue.jobs.pod import groups as pod_rules
from pykueue.jobs.statefulset import workload as statefulset_rules
from tests.e2e.conftest import Kueue, condition, eventually
from tests.e2e.objects import GPU_FLAVOR, cluster_queue, local_queue

GPU_NODE = "gpu-h100-0"
def pod(name: str, namespace: str, cpu: str, *, priority_class: str | None = None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})},
                         "annotations": dict(annotations or {})},
            "spec": spec}


def get_pod(kueue: Kueue, name: str, ns: str) -> dict[str, Any] | None:
    return kueue.get("pod", name, ns)


def gated(obj: dict[str, Any] | None) -> bool:
    return obj is not None and pod_rules.gated(obj)


def running_on_gpu(kueue: Kueue, name: str, ns: str) -> dict[str, Any] | None:
    obj = get_pod(kueue, name, ns)
    if obj and not pod_rules.gated(obj) and obj["spec"].get("nodeName") == GPU_NODE \
            and (obj.get("status") or {}).get("phase") == "Running":
        return obj
    return None


def sts_workload(kueue: Kueue, name: str, ns: str) -> str:
    """The name of a StatefulSet's Workload: upstream's GetWorkloadName(uid, name), so the StatefulSet
    must exist (waited for here)."""
    sts = eventually(lambda: kueue.get("statefulset", name, ns), 30, what=f"statefulset {name}")
    return statefulset_rules.name_of(sts)


def workload_for(kueue: Kueue, ns: str, owner: str) -> dict[str, Any] | None:
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        if any(o.get("name") == owner for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def pending_message(kueue: Kueue, ns: str, owner: str) -> str | None:
    wl = workload_for(kueue, ns, owner)
    cond = condition(wl, "QuotaReserved")
    return cond["message"] if cond and cond["status"] == "False" else None


def succeed(kueue: Kueue, name: str, ns: str) -> None:
    """What a kubelet reports when the Pod's container exits 0."""
    patch = {"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False",
                                                              "reason": "PodCompleted"}]}}
    kueue.cluster.kubectl("patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
                          "-p", json.dumps(patch))


def two_gpu_queues(kueue: Kueue, ns: str) -> None:
    """LocalQueue `lq` on a 1 cpu ClusterQueue NS, `big` on the 4 cpu NS-big, both on the H100 flavor."""
    kueue.apply(GPU_FLAVOR)
    kueue.apply(cluster_queue(ns, "1", flavor="gpu-h100"))
    kueue.apply(cluster_queue(f"{ns}-big", "4", flavor="gpu-h100"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(local_queue(ns, f"{ns}-big", name="big"))
