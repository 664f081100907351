"""``kueue.x-k8s.io/v1beta1``: the shapes that differ from v1beta2, and their conversion to it.

The conversions follow upstream's ``apis/kueue/v1beta1/*_conversion.go``: ``spec.cohort`` becomes
``spec.cohortName``, ``admissionChecks: [names]`` becomes an ``admissionChecksStrategy`` without
``onFlavors``, ``Borrow``/``Preempt`` become ``MayStopSearch``, and ``priorityClassName`` +
``priorityClassSource`` become ``priorityClassRef``. Kinds whose shape did not change are the v1beta2
models (Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import ApiModel, Int32
from pykueue.api.models.meta import ObjectMeta
from pykueue.api.models.pod import LabelSelector

WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"


class FlavorFungibility(ApiModel):
    when_can_borrow: Literal["Borrow", "MayStopSearch", "TryNextFlavor"] | None = None
    when_can_preempt: Literal["Preempt", "MayStopSearch", "TryNextFlavor"] | None = None
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None

    def to_v1beta2(self) -> v2.FlavorFungibility:
        borrow = "MayStopSearch" if self.when_can_borrow == "Borrow" else self.when_can_borrow
        preempt = "MayStopSearch" if self.when_can_preempt == "Preempt" else self.when_can_preempt
        return v2.FlavorFungibility.model_construct(
            when_can_borrow=borrow, when_can_preempt=preempt, preference=self.preference
        )


class ClusterQueueSpec(ApiModel):
    resource_groups: list[v2.ResourceGroup] | None = None
    cohort: str | None = None
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] | None = None
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility | None = None
    preemption: v2.ClusterQueuePreemption | None = None
    admission_checks: list[str] | None = None
    admission_checks_strategy: v2.AdmissionChecksStrategy | None = None
    stop_policy: v2.StopPolicy | None = None
    fair_sharing: v2.FairSharing | None = None
    admission_scope: v2.AdmissionScope | None = None
    concurrent_admission_policy: Any = None

    def to_v1beta2(self) -> v2.ClusterQueueSpec:
        strategy = self.admission_checks_strategy
        if self.admission_checks:
            strategy = v2.AdmissionChecksStrategy.model_construct(
                admission_checks=[
                    v2.AdmissionCheckStrategyRule.model_construct(name=name, on_flavors=None)
                    for name in self.admission_checks
                ]
            )
        fields = {
            name: getattr(self, name) for name in v2.ClusterQueueSpec.model_fields if hasattr(self, name)
        }
        fields.update(
            cohort_name=self.cohort,
            admission_checks_strategy=strategy,
            flavor_fungibility=self.flavor_fungibility.to_v1beta2() if self.flavor_fungibility else None,
        )
        return v2.ClusterQueueSpec.model_construct(**fields)


class ClusterQueue(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: Any = None

    def to_v1beta2(self) -> v2.ClusterQueue:
        return v2.ClusterQueue.model_construct(
            api_version=self.api_version, kind=self.kind, metadata=self.metadata, spec=self.spec.to_v1beta2()
        )


class AdmissionCheckSpec(ApiModel):
    controller_name: str
    retry_delay_minutes: Int32 | None = None
    parameters: Any = None


class AdmissionCheck(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: AdmissionCheckSpec
    status: Any = None

    def to_v1beta2(self) -> v2.AdmissionCheck:
        spec = v2.AdmissionCheckSpec.model_construct(
            controller_name=self.spec.controller_name, parameters=self.spec.parameters
        )
        return v2.AdmissionCheck.model_construct(
            api_version=self.api_version, kind=self.kind, metadata=self.metadata, spec=spec
        )


class WorkloadSpec(ApiModel):
    pod_sets: list[v2.PodSet]
    queue_name: str | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    priority_class_source: Literal[WORKLOAD_PRIORITY_CLASS_SOURCE, POD_PRIORITY_CLASS_SOURCE, ""] | None = (
        None
    )
    active: bool | None = None
    maximum_execution_time_seconds: v2.PositiveInt32 | None = None

    def to_v1beta2(self) -> v2.WorkloadSpec:
        ref = None
        if self.priority_class_name:
            # Upstream's conversion drops a name whose source is empty; before v1beta2 an empty source
            # meant a pod PriorityClass, and that is what a hand-written manifest means by it.
            if self.priority_class_source == WORKLOAD_PRIORITY_CLASS_SOURCE:
                ref = v2.PriorityClassRef.model_construct(
                    group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name=self.priority_class_name
                )
            else:
                ref = v2.PriorityClassRef.model_construct(
                    group="scheduling.k8s.io", kind="PriorityClass", name=self.priority_class_name
                )
        return v2.WorkloadSpec.model_construct(
            pod_sets=self.pod_sets,
            queue_name=self.queue_name,
            priority_class_ref=ref,
            priority=self.priority,
            active=self.active,
            maximum_execution_time_seconds=self.maximum_execution_time_seconds,
        )


class Workload(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: v2.WorkloadStatus | None = None

    def to_v1beta2(self) -> v2.Workload:
        return v2.Workload.model_construct(
            api_version=self.api_version,
            kind=self.kind,
            metadata=self.metadata,
            spec=self.spec.to_v1beta2(),
            status=self.status,
        )


class MultiKueueClusterSpec(ApiModel):
    """v1beta1 names the kubeconfig at ``spec.kubeConfig``; v1beta2 moved it under ``clusterSource``.
    ``clusterProfileRef`` is carried only so a v1beta2 object survives the round trip."""

    kube_config: v2.KubeConfig
    cluster_profile_ref: v2.ClusterProfileReference | None = None

    def to_v1beta2(self) -> v2.MultiKueueClusterSpec:
        # upstream's conversion: a kubeconfig with a location becomes the cluster source
        source = v2.ClusterSource.model_construct(
            kube_config=self.kube_config if self.kube_config.location else None,
            cluster_profile_ref=self.cluster_profile_ref,
        )
        return v2.MultiKueueClusterSpec.model_construct(cluster_source=source)


class MultiKueueCluster(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: MultiKueueClusterSpec
    status: Any = None

    def to_v1beta2(self) -> v2.MultiKueueCluster:
        return v2.MultiKueueCluster.model_construct(
            api_version=self.api_version, kind=self.kind, metadata=self.metadata, spec=self.spec.to_v1beta2(),
            status=self.status,
        )
