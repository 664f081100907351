"""Plain manifests the tests of several layers build: what a user would write, not yet applied."""

from __future__ import annotations

from typing import Any


def batch_job(labels: dict[str, str] | None = None, suspend: bool | None = None, name: str = "j") -> dict[str, Any]:
    """A one-container batch/v1 Job named ``name``, with ``labels`` and ``spec.suspend`` when given."""
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def workload_yaml(name: str, *, cpu: str = "1", count: int = 1, queue: str = "q", namespace: str = "default",
                  notes: str = "", status: str = "") -> str:
    """A one-pod-set Workload as a YAML document (with its leading ``---``), as `pykueue simulate` reads
    it: ``notes`` are the annotations' flow-mapping entries (``pykueue.dev/arrival: 5s, ...``), ``status``
    a whole ``status:`` block appended as it is written."""
    annotations = f"\n  annotations: {{{notes}}}" if notes else ""
    return f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: {namespace}{annotations}
spec:
  queueName: {queue}
  podSets:
  - name: main
    count: {count}
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
{status}"""
