"""Core Kubernetes objects the simulator reads: ``v1 Namespace``, ``scheduling.k8s.io/v1 PriorityClass``,
and just enough of the objects an integration reads (``batch/v1 Job``, ``v1 Pod``, ``apps/v1``
Deployment and StatefulSet, ``ray.io/v1`` RayCluster and RayJob) to find their queue and hand them on."""

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


class Deployment(_Integrated):
    """An apps/v1 Deployment (the deployment integration: its Pods queue one by one)."""


class StatefulSet(_Integrated):
    """An apps/v1 StatefulSet (the statefulset integration: its Pods are one pod group)."""


class RayCluster(_Integrated):
    """A ray.io/v1 RayCluster (the ray.io/raycluster integration)."""


class RayJob(_Integrated):
    """A ray.io/v1 RayJob (the ray.io/rayjob integration)."""


class RayService(_Integrated):
    """A ray.io/v1 RayService (the ray.io/rayservice integration: a serving workload)."""


class JobSet(_Integrated):
    """A jobset.x-k8s.io/v1alpha2 JobSet (the jobset.x-k8s.io/jobset integration)."""


class LeaderWorkerSet(_Integrated):
    """A leaderworkerset.x-k8s.io/v1 LeaderWorkerSet (its integration: one Workload per group)."""
