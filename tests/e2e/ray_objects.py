"""RayCluster and RayJob manifests the Ray end-to-end tests create (KubeRay's CRDs, v1)."""

from __future__ import annotations

from typing import Any


def _template(cpu: str, container: str = "ray") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.41.0",
                                     "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}}


def _cluster_spec(head_cpu: str, worker_cpu: str, workers: int) -> dict[str, Any]:
    return {"headGroupSpec": {"rayStartParams": {}, "template": _template(head_cpu)},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": workers, "minReplicas": workers,
                                  "maxReplicas": workers, "rayStartParams": {}, "template": _template(worker_cpu)}]}


def raycluster(name: str, ns: str, head_cpu: str = "1", worker_cpu: str = "1", workers: int = 1,
               priority_class: str | None = None) -> dict[str, Any]:
    spec = _cluster_spec(head_cpu, worker_cpu, workers)
    if priority_class:
        for template in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
            template["spec"]["priorityClassName"] = priority_class
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": spec}


def rayjob(name: str, ns: str) -> dict[str, Any]:
    """Head 1 cpu, one 1 cpu worker, and a 1 cpu submitter of its own (KubeRay's default one asks
    for memory, which the test queues do not cover)."""
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": _cluster_spec("1", "1", 1),
                     "submitterPodTemplate": {"spec": {"restartPolicy": "Never", **_template(
                         "1", "ray-job-submitter")["spec"]}}}}
