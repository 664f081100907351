"""Core Kubernetes objects the simulator reads: ``v1 Namespace``, ``scheduling.k8s.io/v1 PriorityClass``,
and just enough of ``batch/v1 Job`` to find its queue and hand it to the Job integration."""

from __future__ import annotations

from typing import Any, Literal

from pykueue.api.models.base import ApiModel, Int32
from pykueue.api.models.meta import ObjectMeta


class Namespace(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: Any = None
    status: Any = None


class PriorityClass(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    value: Int32
    global_default: bool | None = None
    description: str | None = None
    preemption_policy: Literal["Never", "PreemptLowerPriority"] | None = None


class _Integrated(ApiModel):
    """An object a Kueue integration turns into a Workload: its spec is the integration's to read;
    here only its identity and labels matter."""

    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any] | None = None
    status: Any = None


class Job(_Integrated):
    """A batch/v1 Job (the Job integration)."""


class Pod(_Integrated):
    """A plain Pod (the pod integration)."""
