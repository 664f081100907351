"""What the loader hands to the simulator: validated objects in engine form, with their sources.

The loader (``pykueue.api.loader``) reads YAML documents, validates them with the API models and converts
them once into ``pykueue.engine.model`` types. Nothing here knows about time except the simulation
annotations, which are parsed into seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pykueue.engine import model

NEVER_READY = math.inf


@dataclass(slots=True, frozen=True)
class Source:
    """Where a document came from, for error lines: ``FILE:DOC``."""

    file: str
    doc: int  # 1-based document number in the file

    def __str__(self) -> str:
        return f"{self.file}:{self.doc}"


@dataclass(slots=True, frozen=True)
class Problem:
    """One invalid-input finding, printed as ``FILE:DOC: KIND NAMESPACE/NAME: FIELD.PATH: message``."""

    source: Source
    kind: str
    namespace: str | None
    name: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.body}"

    @property
    def body(self) -> str:
        """The line without its source: ``KIND NAMESPACE/NAME: FIELD.PATH: message``."""
        ident = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {ident}: {self.path}: {self.message}"


@dataclass(slots=True, init=False)
class SubmittedWorkload:
    """A Workload (or the Workload a Job became) plus the simulator's annotations. Not frozen, its
    ``__init__`` written out (one per workload: a frozen dataclass sets each field through
    ``object.__setattr__``); nothing changes one once made."""

    workload: model.Workload
    source: Source
    arrival: float  # pykueue.dev/arrival, seconds
    runtime: float | None  # pykueue.dev/runtime; None = never finishes
    ready_after: float  # pykueue.dev/ready-after; NEVER_READY = never
    unready_after: float | None  # pykueue.dev/unready-after
    unready_for: float  # pykueue.dev/unready-for
    checks: dict[str, tuple[tuple[str, float], ...]]  # pykueue.dev/admission-checks
    annotations: dict[str, str]  # other than the pykueue.dev/ ones, read above
    expected_runtime: float | None  # pykueue.dev/expected-runtime: what the user expects (forecasts only)
    labels: dict[str, str]
    nominate: tuple[tuple[tuple[str, ...], float], ...]  # pykueue.dev/nominate (an external dispatcher)
    managed_by: str | None  # the job's spec.managedBy (the kinds MultiKueue checks it for), None if unset

    def __init__(self, workload: model.Workload, source: Source, arrival: float = 0.0, runtime: float | None = None,
                 ready_after: float = 0.0, unready_after: float | None = None, unready_for: float = NEVER_READY,
                 checks: dict[str, tuple[tuple[str, float], ...]] | None = None,
                 annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
                 nominate: tuple[tuple[tuple[str, ...], float], ...] = (), managed_by: str | None = None,
                 expected_runtime: float | None = None) -> None:
        self.workload, self.source, self.arrival, self.runtime = workload, source, arrival, runtime
        self.ready_after, self.unready_after, self.unready_for = ready_after, unready_after, unready_for
        self.checks = {} if checks is None else checks
        self.annotations = {} if annotations is None else annotations
        self.labels = {} if labels is None else labels
        self.nominate, self.managed_by, self.expected_runtime = nominate, managed_by, expected_runtime


@dataclass(slots=True, frozen=True)
class UnmanagedJob:
    """A batch/v1 Job (or a Pod) that Kueue does not manage: no queue-name label, its integration not
    enabled, or its namespace left out by ``managedJobsNamespaceSelector``. Kueue leaves it alone, but its labels and annotations may show that its author meant it
    to be queued (see ``pykueue.api.references``)."""

    source: Source
    namespace: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    kind: str = "Job"
    framework: str = "batch/job"  # the integration that would manage it, by upstream's name
    framework_enabled: bool = True
    namespace_left_out: bool = False  # managedJobsNamespaceSelector does not select its namespace


@dataclass(slots=True, frozen=True)
class Change:
    """An object document carrying ``pykueue.dev/at``: it replaces the object of the same kind and name at
    that virtual time (``obj`` is the new engine object; ``None`` with ``delete`` means removal).

    For a Workload or a Job ``obj`` is a ``SubmittedWorkload`` (kind ``Job`` for a Job); for a
    PriorityClass or WorkloadPriorityClass it is the new ``int`` value."""

    at: float
    kind: str
    key: str  # NAME, or NAMESPACE/NAME
    obj: object | None
    source: Source
    delete: bool = False


@dataclass(slots=True)
class Inputs:
    """Everything a simulation starts from, in document order within each list."""

    resource_flavors: list[model.ResourceFlavor] = field(default_factory=list)
    cluster_queues: list[model.ClusterQueue] = field(default_factory=list)
    cohorts: list[model.Cohort] = field(default_factory=list)
    local_queues: list[model.LocalQueue] = field(default_factory=list)
    namespaces: list[model.Namespace] = field(default_factory=list)
    admission_checks: list[model.AdmissionCheck] = field(default_factory=list)
    workloads: list[SubmittedWorkload] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    config: model.Config = field(default_factory=model.Config)
    # name -> value, for reference (priorities are already resolved on the workloads)
    priority_classes: dict[str, int] = field(default_factory=dict)
    workload_priority_classes: dict[str, int] = field(default_factory=dict)
    # accepted, but probably not what the author meant: printed as "Warning: ..." (exit status 0)
    warnings: list[Problem] = field(default_factory=list)
    # where each object of the initial state was written, by (kind, NAME or NAMESPACE/NAME); workloads
    # carry their own source. With ``files`` (in reading order) it places later findings in input order.
    sources: dict[tuple[str, str], Source] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    unmanaged_jobs: list[UnmanagedJob] = field(default_factory=list)
