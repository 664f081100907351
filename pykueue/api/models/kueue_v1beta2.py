"""``kueue.x-k8s.io/v1beta2``: the storage version, and the shape every v1beta1 object is normalised to."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pykueue.api.models.base import ApiModel, Int32, NonNegativeInt32, PositiveInt32, Quantity
from pykueue.api.models.meta import ObjectMeta
from pykueue.api.models.pod import LabelSelector, PodTemplateSpec, Taint, Toleration

StopPolicy = Literal["None", "Hold", "HoldAndDrain"]

# --- quota (shared by ClusterQueue and Cohort) ------------------------------------------------------------


class ResourceQuota(ApiModel):
    name: str
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(ApiModel):
    name: str
    resources: list[ResourceQuota]


class ResourceGroup(ApiModel):
    covered_resources: list[str]
    flavors: list[FlavorQuotas]


class FairSharing(ApiModel):
    weight: Quantity | None = None


# --- ClusterQueue -------------------------------------------------------------------------------------


class BorrowWithinCohort(ApiModel):
    policy: Literal["Never", "LowerPriority"] | None = None
    max_priority_threshold: Int32 | None = None


class ClusterQueuePreemption(ApiModel):
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    borrow_within_cohort: BorrowWithinCohort | None = None
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = None


class FlavorFungibility(ApiModel):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class AdmissionCheckStrategyRule(ApiModel):
    name: str
    on_flavors: list[str] | None = None


class AdmissionChecksStrategy(ApiModel):
    admission_checks: list[AdmissionCheckStrategyRule] | None = None


class AdmissionScope(ApiModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


class ClusterQueueSpec(ApiModel):
    resource_groups: list[ResourceGroup] | None = None
    cohort_name: str | None = None
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] | None = None
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility | None = None
    preemption: ClusterQueuePreemption | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    stop_policy: StopPolicy | None = None
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: Any = None


class ClusterQueue(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: Any = None


# --- Cohort --------------------------------------------------------------------------------------------


class CohortSpec(ApiModel):
    parent_name: str | None = None
    resource_groups: list[ResourceGroup] | None = None
    fair_sharing: FairSharing | None = None


class Cohort(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: CohortSpec = Field(default_factory=CohortSpec)
    status: Any = None


# --- LocalQueue, ResourceFlavor, WorkloadPriorityClass, AdmissionCheck ----------------------------------


class LocalQueueSpec(ApiModel):
    cluster_queue: str | None = None
    stop_policy: StopPolicy | None = None
    fair_sharing: FairSharing | None = None


class LocalQueue(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    status: Any = None


class ResourceFlavorSpec(ApiModel):
    node_labels: dict[str, str] | None = None
    node_taints: list[Taint] | None = None
    tolerations: list[Toleration] | None = None
    topology_name: str | None = None


class ResourceFlavor(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


class WorkloadPriorityClass(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    value: Int32
    description: str | None = None


class AdmissionCheckSpec(ApiModel):
    controller_name: str
    parameters: Any = None


class AdmissionCheck(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: AdmissionCheckSpec
    status: Any = None


# --- Workload ------------------------------------------------------------------------------------------


class PodSet(ApiModel):
    name: str = "main"
    template: PodTemplateSpec
    count: NonNegativeInt32 = 1
    min_count: PositiveInt32 | None = None
    topology_request: Any = None


class PriorityClassRef(ApiModel):
    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: str


class WorkloadSpec(ApiModel):
    pod_sets: list[PodSet]
    queue_name: str | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority: Int32 | None = None
    active: bool | None = None
    maximum_execution_time_seconds: PositiveInt32 | None = None


class PodSetAssignment(ApiModel):
    name: str = "main"
    flavors: dict[str, str] | None = None
    resource_usage: dict[str, Quantity] | None = None
    count: NonNegativeInt32 | None = None
    topology_assignment: Any = None
    delayed_topology_request: Any = None


class Admission(ApiModel):
    cluster_queue: str
    pod_set_assignments: list[PodSetAssignment]


class ReclaimablePod(ApiModel):
    name: str
    count: NonNegativeInt32


class WorkloadStatus(ApiModel):
    conditions: Any = None
    admission: Admission | None = None
    requeue_state: Any = None
    reclaimable_pods: list[ReclaimablePod] | None = None
    admission_checks: Any = None
    resource_requests: Any = None
    accumulated_past_execution_time_seconds: Any = None
    accumulated_past_exexcution_time_seconds: Any = None  # v1beta1 spelling
    scheduling_stats: Any = None
    nominated_cluster_names: Any = None
    cluster_name: Any = None
    unhealthy_nodes: Any = None


class Workload(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: WorkloadStatus | None = None


# --- MultiKueue ------------------------------------------------------------------------------------------

MultiKueueLocationType = Literal["Secret", "Path"]


class KubeConfig(ApiModel):
    location: str
    location_type: MultiKueueLocationType | None = None  # the API server defaults it to Secret


class ClusterProfileReference(ApiModel):
    name: str


class ClusterSource(ApiModel):
    kube_config: KubeConfig | None = None
    cluster_profile_ref: ClusterProfileReference | None = None


class MultiKueueClusterSpec(ApiModel):
    cluster_source: ClusterSource = Field(default_factory=ClusterSource)


class MultiKueueCluster(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: MultiKueueClusterSpec = Field(default_factory=MultiKueueClusterSpec)
    status: Any = None


class MultiKueueConfigSpec(ApiModel):
    clusters: list[str] | None = None


class MultiKueueConfig(ApiModel):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: MultiKueueConfigSpec = Field(default_factory=MultiKueueConfigSpec)
