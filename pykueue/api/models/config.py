"""Kueue's ``Configuration`` (``config.kueue.x-k8s.io`` v1beta1 and v1beta2), the parts the engine reads.

Kueue decodes its configuration strictly, so unknown fields are errors here too; sections the simulator
does not use are accepted as they are. In v1beta2 ``waitForPodsReady`` and ``fairSharing`` have no
``enable`` field: the section being present turns the feature on, and ``timeout`` /
``preemptionStrategies`` are then required.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pykueue.api.models.base import ApiModel, Int32

PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


class RequeuingStrategy(ApiModel):
    timestamp: Literal["Eviction", "Creation"] | None = None
    backoff_limit_count: Int32 | None = None
    backoff_base_seconds: Int32 | None = None
    backoff_max_seconds: Int32 | None = None


class WaitForPodsReadyV1beta2(ApiModel):
    timeout: Any  # a Go duration; checked when the configuration is read
    block_admission: bool | None = None
    requeuing_strategy: RequeuingStrategy | None = None
    recovery_timeout: Any = None


class WaitForPodsReadyV1beta1(ApiModel):
    enable: bool | None = None
    timeout: Any = None
    block_admission: bool | None = None
    requeuing_strategy: RequeuingStrategy | None = None
    recovery_timeout: Any = None


class FairSharingV1beta2(ApiModel):
    preemption_strategies: list[PreemptionStrategy]


class FairSharingV1beta1(ApiModel):
    enable: bool | None = None
    preemption_strategies: list[PreemptionStrategy] | None = None


class _ConfigurationBase(ApiModel):
    api_version: str
    kind: str
    metadata: Any = None  # not part of the Go type; tolerated so a Configuration can sit among manifests
    namespace: Any = None
    manage_jobs_without_queue_name: bool | None = None
    managed_jobs_namespace_selector: Any = None
    internal_cert_management: Any = None
    client_connection: Any = None
    integrations: Any = None
    multi_kueue: Any = None
    admission_fair_sharing: Any = None
    resources: Any = None
    feature_gates: dict[str, bool] | None = None
    object_retention_policies: Any = None
    # ControllerManager, inlined
    webhook: Any = None
    leader_election: Any = None
    metrics: Any = None
    health: Any = None
    pprof_bind_address: Any = None
    controller: Any = None
    tls: Any = Field(default=None, alias="tls")


class ConfigurationV1beta2(_ConfigurationBase):
    wait_for_pods_ready: WaitForPodsReadyV1beta2 | None = None
    fair_sharing: FairSharingV1beta2 | None = None


class ConfigurationV1beta1(_ConfigurationBase):
    wait_for_pods_ready: WaitForPodsReadyV1beta1 | None = None
    fair_sharing: FairSharingV1beta1 | None = None
    queue_visibility: Any = None
