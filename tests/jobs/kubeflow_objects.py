"""A training job of any of the Kubeflow kinds, for their tests."""

from __future__ import annotations

from typing import Any


def replica(container: str, cpu: str, replicas: int | None = None, **pod: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"template": {"spec": {"containers": [
        {"name": container, "image": "busybox", "resources": {"requests": {"cpu": cpu}}}], **pod}}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def training_job(api_version: str, kind: str, field: str, specs: dict[str, Any], *, suspend: bool | None = True,
                 status: dict[str, Any] | None = None, run_policy: dict[str, Any] | None = None,
                 **meta: Any) -> dict[str, Any]:
    """``train`` in namespace ns, queued in lq, its replica specs in ``spec.<field>``; ``suspend`` None:
    no ``runPolicy.suspend`` (and no ``runPolicy`` unless ``run_policy`` is given)."""
    policy = dict(run_policy or {})
    if suspend is not None:
        policy["suspend"] = suspend
    spec: dict[str, Any] = {field: specs}
    if policy or run_policy is not None:
        spec["runPolicy"] = policy
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": "train", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                                        "labels": {"kueue.x-k8s.io/queue-name": "lq"}, **meta},
                           "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj
