"""Plain manifests the tests of several layers build: what a user would write, not yet applied."""

from __future__ import annotations

from typing import Any


def batch_job(labels: dict[str, str] | None = None, suspend: bool | None = None, name: str = "j") -> dict[str, Any]:
    """A one-container batch/v1 Job named ``name``, with ``labels`` and ``spec.suspend`` when given."""
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}
