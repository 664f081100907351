"""The engine's internal form of the API objects.

Every front end (YAML files, the embedded plane, the Kubernetes controller) converts its objects into
these plain, slotted dataclasses once, on the way in; the engine never sees pydantic or dicts.
Quantities are integers in Kueue's canonical units: milli-units for ``cpu``, whole units (bytes for
memory) for everything else. A limit that is absent is ``None`` and means "no limit".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# Virtual time. Every time the engine stores or compares is an integer number of microseconds: a
# float sum such as ``now + backoff`` can land a rounding error away from the instant the driver
# wakes up at, and then the backoff never expires. Durations given in seconds (configuration, API
# fields) are converted once, with ``seconds_to_us``.
US = 1_000_000

_NOTHING: dict[Any, Any] = {}


def nothing() -> dict[Any, Any]:
    """The one shared empty dict for the dict fields that are empty in nearly every object (no
    reclaimable pods, no admission checks, no usage once released): a million workloads held five
    empty dicts each. Never written to: a holder that gains entries is given a dict of its own."""
    return _NOTHING


def seconds_to_us(seconds: float) -> int:
    """Seconds as whole microseconds (exact for any duration written to the microsecond)."""
    return round(seconds * US)


def format_us(us: int) -> str:
    """A time for messages, exactly: ``300s``, ``0.003s``, ``372480.003s``."""
    sign, us = ("-", -us) if us < 0 else ("", us)
    whole, frac = divmod(us, US)
    return f"{sign}{whole}.{frac:06d}".rstrip("0").rstrip(".") + "s"


# Policy values, normalised to their v1beta2 spelling.
NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
ANY = "Any"

BEST_EFFORT_FIFO = "BestEffortFIFO"
STRICT_FIFO = "StrictFIFO"

MAY_STOP_SEARCH = "MayStopSearch"  # v1beta1 "Borrow" / "Preempt"
TRY_NEXT_FLAVOR = "TryNextFlavor"
BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"

STOP_NONE = "None"
STOP_HOLD = "Hold"
STOP_HOLD_AND_DRAIN = "HoldAndDrain"

PODS = "pods"


@dataclass(slots=True, frozen=True)
class ResourceQuota:
    """Quota of one resource in one flavor of a ClusterQueue or Cohort."""

    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(slots=True, frozen=True)
class FlavorQuotas:
    name: str
    resources: dict[str, ResourceQuota]


@dataclass(slots=True, frozen=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(slots=True, frozen=True)
class Requirement:
    """A label selector requirement (matchExpressions / nodeSelectorTerms entry)."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist (Gt, Lt for node affinity)
    values: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything."""

    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty matches every effect


@dataclass(slots=True, frozen=True)
class ResourceFlavor:
    name: str
    node_labels: dict[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(slots=True, frozen=True)
class PreemptionPolicy:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(slots=True, frozen=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None


class CheckState(StrEnum):
    """An admission check's state for one quota reservation (status.admissionChecks[].state)."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


@dataclass(slots=True, frozen=True)
class AdmissionCheckRule:
    """One entry of admissionChecksStrategy: the check applies to the listed flavors, or all if empty."""

    name: str
    on_flavors: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class ClusterQueue:
    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    # None is the "nothing" selector (an absent namespaceSelector admits no namespace).
    namespace_selector: LabelSelector | None = None
    queueing_strategy: str = BEST_EFFORT_FIFO
    preemption: PreemptionPolicy = PreemptionPolicy()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    stop_policy: str = STOP_NONE
    fair_weight_milli: int = 1000  # spec.fairSharing.weight, in milli-units
    admission_checks: tuple[AdmissionCheckRule, ...] = ()


@dataclass(slots=True, frozen=True)
class Cohort:
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight_milli: int = 1000


@dataclass(slots=True, frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = STOP_NONE
    invalid: str | None = None  # an object that bypassed validation: what validation says; admits nothing

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True, frozen=True)
class Namespace:
    name: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class AdmissionCheck:
    name: str
    controller_name: str = ""


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()


# PodSet, PodSetAssignment and Admission are made per workload or per admission: like Workload below,
# not frozen and their ``__init__`` written out (see Workload), never changed once made.


@dataclass(slots=True, init=False)
class PodSet:
    """One homogeneous group of pods: per-pod requests (canonical ints) and placement constraints."""

    name: str
    count: int
    requests: dict[str, int]  # per pod, never contains "pods"
    min_count: int | None
    node_selector: dict[str, str]
    # Required node affinity terms (ORed); None when the pod has none.
    required_affinity: tuple[NodeSelectorTerm, ...] | None
    tolerations: tuple[Toleration, ...]

    def __init__(self, name: str, count: int, requests: dict[str, int], min_count: int | None = None,
                 node_selector: dict[str, str] | None = None,
                 required_affinity: tuple[NodeSelectorTerm, ...] | None = None,
                 tolerations: tuple[Toleration, ...] = ()) -> None:
        self.name, self.count, self.requests, self.min_count = name, count, requests, min_count
        self.node_selector = {} if node_selector is None else node_selector
        self.required_affinity, self.tolerations = required_affinity, tolerations


@dataclass(slots=True, init=False)
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, str]  # resource -> flavor

    def __init__(self, name: str, count: int, flavors: dict[str, str]) -> None:
        self.name, self.count, self.flavors = name, count, flavors


@dataclass(slots=True, init=False)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]

    def __init__(self, cluster_queue: str, pod_set_assignments: tuple[PodSetAssignment, ...]) -> None:
        self.cluster_queue, self.pod_set_assignments = cluster_queue, pod_set_assignments


@dataclass(slots=True, init=False)
class Workload:
    """A workload as submitted (a Workload object, or the Workload a Job becomes). Never changed once
    made (``dataclasses.replace`` makes a changed copy); not frozen, its ``__init__`` written out: one
    per workload, and a frozen dataclass sets each field through ``object.__setattr__``, in an
    ``__init__`` that stays interpreted even in a compiled build."""

    namespace: str
    name: str
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    priority: int
    priority_class_name: str | None
    priority_class_source: str | None  # kueue.x-k8s.io/workloadpriorityclass or scheduling.k8s.io/priorityclass
    active: bool
    creation_time: float  # seconds on the virtual (or real) clock
    reclaimable_pods: dict[str, int]
    admission: Admission | None  # pre-existing admission (status.admission)
    kind: str  # the submitted object's kind: Workload or Job
    # With ``admission``: False when the status says quota is only reserved (Admitted=False, admission
    # checks not all Ready); then ``check_states`` holds the states the status reports, by check name.
    admitted: bool
    check_states: dict[str, str]
    # spec.maximumExecutionTimeSeconds, and the admitted time already spent by earlier admissions
    # (status.accumulatedPastExecutionTimeSeconds): whole seconds, as upstream keeps them.
    max_execution_seconds: int | None
    accumulated_execution_seconds: int
    # With an Admitted ``admission`` restored from a status: when it was admitted (the Admitted
    # condition's time, seconds; None: at the instant it is added) and whether its pods are ready.
    admitted_time: float | None
    pods_ready: bool
    # With ``admission``: the reason of an eviction the status records (Evicted=True) while the quota
    # is still reserved: its job is still stopping, so it holds the quota without running.
    evicted: str | None
    # Workload slicing (upstream's ElasticJobsViaWorkloadSlices): the job's elastic-job annotation, and the
    # NAMESPACE/NAME of the admitted slice this one replaces when admitted (a scale-up).
    elastic: bool
    replaces: str | None
    # Held by its job (upstream's OnHold: a StatefulSet scaled to zero): restored from a status whose
    # QuotaReserved=False condition says OnHold; never queued until its job lets it go (Engine.hold).
    on_hold: bool
    # NAMESPACE/NAME, made once: the engine, the simulator and the writers all key by it (a property
    # made a new string at each call, and each holder kept its own copy).
    key: str = field(init=False, repr=False, compare=False)

    def __init__(self, namespace: str, name: str, queue_name: str, pod_sets: tuple[PodSet, ...], priority: int = 0,
                 priority_class_name: str | None = None, priority_class_source: str | None = None,
                 active: bool = True, creation_time: float = 0.0, reclaimable_pods: dict[str, int] | None = None,
                 admission: Admission | None = None, kind: str = "Workload", admitted: bool = True,
                 check_states: dict[str, str] | None = None, max_execution_seconds: int | None = None,
                 accumulated_execution_seconds: int = 0, admitted_time: float | None = None,
                 pods_ready: bool = True, evicted: str | None = None, elastic: bool = False,
                 replaces: str | None = None, on_hold: bool = False) -> None:
        self.namespace, self.name, self.queue_name, self.pod_sets = namespace, name, queue_name, pod_sets
        self.priority, self.priority_class_name = priority, priority_class_name
        self.priority_class_source, self.active, self.creation_time = priority_class_source, active, creation_time
        self.reclaimable_pods = nothing() if reclaimable_pods is None else reclaimable_pods
        self.admission, self.kind, self.admitted = admission, kind, admitted
        self.check_states = nothing() if check_states is None else check_states
        self.max_execution_seconds = max_execution_seconds
        self.accumulated_execution_seconds = accumulated_execution_seconds
        self.admitted_time, self.pods_ready, self.evicted = admitted_time, pods_ready, evicted
        self.elastic, self.replaces, self.on_hold = elastic, replaces, on_hold
        self.key = f"{namespace}/{name}"


@dataclass(slots=True, frozen=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"  # Eviction or Creation
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@dataclass(slots=True, frozen=True)
class WaitForPodsReady:
    enable: bool = False
    timeout_seconds: float = 300.0
    recovery_timeout_seconds: float | None = None
    block_admission: bool = False
    requeuing: RequeuingStrategy = RequeuingStrategy()


@dataclass(slots=True, frozen=True)
class FairSharing:
    enable: bool = False
    preemption_strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass(slots=True, frozen=True)
class Metrics:
    """Which optional series `/metrics` exports (the controller reads this, the engine does not)."""

    # metrics.enableClusterQueueResources: quota, reservation, usage and weighted share per ClusterQueue
    cluster_queue_resources: bool = False
    # the LocalQueueMetrics feature gate (beta and on by default since upstream v0.17): the kueue_local_queue_* series
    local_queues: bool = True


MULTIKUEUE_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
MULTIKUEUE_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


@dataclass(slots=True, frozen=True)
class MultiKueue:
    """The Configuration's ``multiKueue`` block, with upstream's defaults (the controller reads it)."""

    gc_interval_seconds: float = 60.0  # 0 turns the garbage collection of orphaned remote objects off
    origin: str = "multikueue"  # the value of the origin label on every object this manager creates remotely
    worker_lost_timeout_seconds: float = 900.0  # how long a workload waits for a lost worker that admitted it
    # the built-in dispatchers by these names; any other name leaves nominating to an external controller
    dispatcher_name: str = MULTIKUEUE_ALL_AT_ONCE


# Upstream's default managedJobsNamespaceSelector: every namespace but kube-system and the controller's
# own (the Configuration's ``namespace``, kueue-system unless set).
DEFAULT_MANAGED_JOBS_NAMESPACES = LabelSelector(match_expressions=(
    Requirement("kubernetes.io/metadata.name", "NotIn", ("kube-system", "kueue-system")),))


@dataclass(slots=True, frozen=True)
class Config:
    """The parts of Kueue's Configuration the engine reads."""

    wait_for_pods_ready: WaitForPodsReady = WaitForPodsReady()
    fair_sharing: FairSharing = FairSharing()
    manage_jobs_without_queue_name: bool = False
    # integrations.frameworks: the kinds Kueue manages, by upstream's names (the drivers read it; the
    # engine only queues what they give it). Upstream's default: batch/job alone.
    frameworks: tuple[str, ...] = ("batch/job",)
    metrics: Metrics = Metrics()
    # managedJobsNamespaceSelector: the namespaces whose jobs Kueue touches (None: every one); the drivers
    # read it, the engine only queues what they give it
    managed_jobs_namespace_selector: LabelSelector | None = DEFAULT_MANAGED_JOBS_NAMESPACES
    # integrations.labelKeysToCopy: the job's labels a Workload made for it carries
    label_keys_to_copy: tuple[str, ...] = ()
    multi_kueue: MultiKueue = MultiKueue()
    # namespace: the controller's own, where it reads its MultiKueue kubeconfig Secrets (upstream's
    # Configuration.namespace); None: the pod's, else pykueue-system. The engine never reads it.
    namespace: str | None = None
    # featureGates.UnadmittedWorkloadsObservability: the controller writes the granular QuotaReserved=False
    # reasons (WaitingForQuota, ...) the engine gives; off (upstream's default), their older Pending and
    # Inadmissible. The engine and the simulator always use the granular ones; the engine never reads it.
    granular_reasons: bool = False
