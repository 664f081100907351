"""Core Kubernetes objects the simulator reads: ``v1 Namespace``, ``scheduling.k8s.io/v1 PriorityClass``,
and just enough of the objects an integration reads (a Job, a Pod, a JobSet, ...: ``Integrated``) to find
their queue and hand them on."""

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


class Integrated(ApiModel):
    """An object a Kueue integration turns into a Workload (every kind in ``jobs.registry``): its spec is
    the integration's to read (``Integration.reading``); here only its identity and labels matter."""

    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any] | None = None
    status: Any = None
