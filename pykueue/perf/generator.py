"""Upstream's scheduler performance generator, as plain ``kueue.x-k8s.io/v1beta2`` manifests.

Mirrors ``test/performance/scheduler/runner/generator/generator.go`` (Kueue v0.18):

- one ResourceFlavor (``rf`` unless ``resourceFlavor.name`` says otherwise), labelled for cleanup;
- no Cohort objects: each ClusterQueue names its cohort ``<cohortClass>-<cohortIdx>`` in
  ``spec.cohortName``;
- per queue: a ClusterQueue ``<queueClass>-<queueSetIdx>-<queueIdx>-<cohort>`` covering ``cpu`` from
  the one flavor (nominalQuota, borrowingLimit), with the queue set's preemption policies, a Namespace
  and a LocalQueue of that same name;
- per queue and workloads set, ``count`` rounds over the set's templates; each Workload is named
  ``<class>-<setIdx>-<round>-<templateIdx>``, carries ``spec.priority`` directly (no priority class)
  and one pod set ``main`` of one pod requesting ``request`` cpu.

Timing: upstream starts one goroutine per workloads set of every queue at once, and each goroutine
sleeps ``creationIntervalMs`` *before* every creation. So the k-th workload (1-based) of a set is created
at ``k * creationIntervalMs`` after start, independently for every set and queue. The fake job runner
finishes a workload ``runtimeMs`` after it is admitted (restarting the count on re-admission), which is
exactly ``pykueue.dev/runtime``.
"""

from __future__ import annotations

import gc
import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.perf._yaml import read_config

KUEUE_API = "kueue.x-k8s.io/v1beta2"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"
ARRIVAL_ANNOTATION = "pykueue.dev/arrival"
RUNTIME_ANNOTATION = "pykueue.dev/runtime"
DEFAULT_FLAVOR = "rf"
MEASURED_RESOURCE = "cpu"  # the only resource upstream's generator requests and its recorder measures
POD_SET_NAME = "main"
CONTAINER_NAME = "c"

RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# Upstream's generator has no bound (its runs take hours at 50,000 workloads); pykueue builds every
# object in memory first, so a count that cannot be meant (1e11) is refused instead of allocating
# until the machine gives out. A million workloads simulates in minutes; ten is still feasible.
MAX_WORKLOADS = 10_000_000
MAX_CLUSTER_QUEUES = 1_000_000
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_SUFFIX = {
    "": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip

# Keys upstream knows but pykueue cannot honour; naming them beats a generic "unknown key".
_TAS_DRA = "TAS/DRA generator features (topology, devices) are not supported by pykueue"
_UNSUPPORTED_TOP = {"topology": _TAS_DRA, "dra": _TAS_DRA}
_UNSUPPORTED_FLAVOR = {"topologyName": _TAS_DRA}
_UNSUPPORTED_QUEUES = {"deviceNominalQuota": _TAS_DRA, "deviceBorrowingLimit": _TAS_DRA}
_UNSUPPORTED_COHORT = {"children": "nested cohorts are not supported by pykueue's generator yet"}
_UNSUPPORTED_SET = {"initialDelayMs": "initialDelayMs is not supported by pykueue's generator yet"}
_UNSUPPORTED_WORKLOAD = {
    "podCount": _TAS_DRA + " (upstream ignores podCount without tasLevel)",
    "tasConstraint": _TAS_DRA,
    "tasLevel": _TAS_DRA,
    "sliceSize": _TAS_DRA,
    "devices": _TAS_DRA,
}


class GeneratorError(ValueError):
    """Invalid generator config; one ``FILE: FIELD.PATH: message`` line per problem."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems  # (field path, message)
        super().__init__("\n".join(f"{source}: {p}: {m}" if p else f"{source}: {m}" for p, m in problems))


@dataclass(frozen=True, slots=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: str  # quantity of cpu, as written


@dataclass(frozen=True, slots=True)
class WorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True, slots=True)
class QueuesSet:
    class_name: str
    count: int
    nominal_quota: str
    borrowing_limit: str | None
    lending_limit: str | None
    reclaim_within_cohort: str | None  # None: left to the API default (Never)
    within_cluster_queue: str | None
    workloads_sets: tuple[WorkloadsSet, ...]


@dataclass(frozen=True, slots=True)
class CohortSet:
    class_name: str
    count: int
    queues_sets: tuple[QueuesSet, ...]


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    cohorts: tuple[CohortSet, ...]
    resource_flavor: str = DEFAULT_FLAVOR

    @property
    def cluster_queue_count(self) -> int:
        return sum(cs.count * qs.count for cs in self.cohorts for qs in cs.queues_sets)

    @property
    def workload_count(self) -> int:
        return sum(
            cs.count * qs.count * ws.count * len(ws.workloads)
            for cs in self.cohorts
            for qs in cs.queues_sets
            for ws in qs.workloads_sets
        )


# ------------------------------------------------------------------------------------------ loading


def quantity_value(text: str) -> float:
    """Numeric value of a Kubernetes quantity string (``"500m"`` -> 0.5); ``ValueError`` if malformed."""
    m = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"invalid quantity {text!r}")
    suffix = m["suffix"] or ""
    scale = 10.0 ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _SUFFIX[suffix]
    value = float(m["num"]) * scale
    return -value if m["sign"] == "-" else value


class _Reader:
    """Walks the decoded YAML, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def mapping(
        self, node: Any, path: str, known: tuple[str, ...], unsupported: dict[str, str] | None = None
    ) -> dict[str, Any] | None:
        if not isinstance(node, dict):
            self.fail(path, f"must be a mapping, got {_kind(node)}")
            return None
        for key in node:
            sub = f"{path}.{key}" if path else str(key)
            if unsupported and key in unsupported:
                self.fail(sub, unsupported[key])
            elif key not in known:
                self.fail(sub, f"unknown field (known: {', '.join(known)})")
        return node

    def seq(self, node: Any, path: str, *, required: bool = False) -> list[Any]:
        if node is None:
            if required:
                self.fail(path, "is required")
            return []
        if not isinstance(node, list):
            self.fail(path, f"must be a list, got {_kind(node)}")
            return []
        return node

    def integer(self, node: Any, path: str, *, lo: int, hi: int | None = None, default: int = 0) -> int:
        if node is None:
            return default
        if isinstance(node, bool) or not isinstance(node, int):
            self.fail(path, f"must be an integer, got {_kind(node)}")
            return default
        if node < lo or (hi is not None and node > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
            self.fail(path, f"must be {bound}, got {node}")
            return default
        return node

    def class_name(self, node: Any, path: str) -> str:
        text = _scalar_text(node)
        if text is None or text == "":
            self.fail(path, "is required (a non-empty string)" if node in (None, "") else "must be a string")
            return "x"
        if not _DNS_LABEL.match(text) or len(text) > 63:
            self.fail(path, f"{text!r} must be a DNS-1123 label (lowercase letters, digits, '-'; 63 at most)")
        return text

    def quantity(self, node: Any, path: str, *, required: bool) -> str | None:
        if node is None or node == "":
            if required:
                self.fail(path, "is required (a quantity such as 20 or 500m)")
            return None
        text = _scalar_text(node)
        if text is None:
            self.fail(path, f"must be a quantity, got {_kind(node)}")
            return None
        try:
            value = quantity_value(text)
        except ValueError:
            self.fail(path, f"invalid quantity {text!r}")
            return None
        if value < 0:
            self.fail(path, f"must not be negative, got {text!r}")
        return text

    def enum(self, node: Any, path: str, allowed: tuple[str, ...]) -> str | None:
        if node is None or node == "":
            return None
        if node not in allowed:
            self.fail(path, f"must be one of {', '.join(allowed)}, got {node!r}")
            return None
        return node


def _kind(node: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(node), type(node).__name__ if node is not None else "nothing"
    )


def _scalar_text(node: Any) -> str | None:
    """String form of a scalar, as ``sigs.k8s.io/yaml`` gives a number decoded into a string field."""
    if isinstance(node, bool) or node is None:
        return None
    if isinstance(node, str):
        return node
    if isinstance(node, int):
        return str(node)
    if isinstance(node, float):
        return repr(node) if not node.is_integer() else str(int(node))
    return None


def parse_generator(data: Any, source: str = "<generator>") -> GeneratorConfig:
    """Validate decoded generator YAML (``cohorts:`` mapping, or the older bare list of cohort sets)."""
    r = _Reader()
    flavor = DEFAULT_FLAVOR
    raw_cohorts: Any
    if isinstance(data, list):  # older upstream format: the file is the bare list of cohort sets
        raw_cohorts, prefix = data, "cohorts"
    elif data is None:
        r.fail("", "the file is empty")
        raise GeneratorError(source, r.problems)
    else:
        top = r.mapping(data, "", ("cohorts", "resourceFlavor"), _UNSUPPORTED_TOP) or {}
        raw_cohorts, prefix = top.get("cohorts"), "cohorts"
        if "resourceFlavor" in top:
            rf = r.mapping(
                top["resourceFlavor"], "resourceFlavor", ("name", "nodeLabel"), _UNSUPPORTED_FLAVOR
            )
            if rf is not None:
                name = rf.get("name")
                if not isinstance(name, str) or not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
                    r.fail("resourceFlavor.name", f"must be a DNS-1123 subdomain, got {name!r}")
                else:
                    flavor = name
    cohorts_list = r.seq(raw_cohorts, prefix, required=True)
    if not cohorts_list and raw_cohorts is not None and isinstance(raw_cohorts, list):
        r.fail(prefix, "config must contain at least one cohort")
    cohorts = tuple(_cohort_set(r, c, f"{prefix}[{i}]") for i, c in enumerate(cohorts_list))
    cfg = GeneratorConfig(cohorts=cohorts, resource_flavor=flavor)
    if not r.problems:
        _check_size(r, cfg, prefix)
    if not r.problems:
        _check_names(r, cfg)
    if r.problems:
        raise GeneratorError(source, r.problems)
    return cfg


def _cohort_set(r: _Reader, node: Any, path: str) -> CohortSet:
    m = r.mapping(node, path, ("className", "count", "queuesSets"), _UNSUPPORTED_COHORT) or {}
    return CohortSet(
        class_name=r.class_name(m.get("className"), f"{path}.className"),
        count=r.integer(m.get("count"), f"{path}.count", lo=0),
        queues_sets=tuple(
            _queues_set(r, q, f"{path}.queuesSets[{i}]")
            for i, q in enumerate(r.seq(m.get("queuesSets"), f"{path}.queuesSets"))
        ),
    )


def _queues_set(r: _Reader, node: Any, path: str) -> QueuesSet:
    known = (
        "className", "count", "nominalQuota", "borrowingLimit", "lendingLimit",
        "reclaimWithinCohort", "withinClusterQueue", "workloadsSets",
    )  # fmt: skip
    m = r.mapping(node, path, known, _UNSUPPORTED_QUEUES) or {}
    return QueuesSet(
        class_name=r.class_name(m.get("className"), f"{path}.className"),
        count=r.integer(m.get("count"), f"{path}.count", lo=0),
        nominal_quota=r.quantity(m.get("nominalQuota"), f"{path}.nominalQuota", required=True) or "0",
        borrowing_limit=r.quantity(m.get("borrowingLimit"), f"{path}.borrowingLimit", required=False),
        lending_limit=r.quantity(m.get("lendingLimit"), f"{path}.lendingLimit", required=False),
        reclaim_within_cohort=r.enum(
            m.get("reclaimWithinCohort"), f"{path}.reclaimWithinCohort", RECLAIM_WITHIN_COHORT
        ),
        within_cluster_queue=r.enum(
            m.get("withinClusterQueue"), f"{path}.withinClusterQueue", WITHIN_CLUSTER_QUEUE
        ),
        workloads_sets=tuple(
            _workloads_set(r, w, f"{path}.workloadsSets[{i}]")
            for i, w in enumerate(r.seq(m.get("workloadsSets"), f"{path}.workloadsSets"))
        ),
    )


def _workloads_set(r: _Reader, node: Any, path: str) -> WorkloadsSet:
    m = r.mapping(node, path, ("count", "creationIntervalMs", "workloads"), _UNSUPPORTED_SET) or {}
    return WorkloadsSet(
        count=r.integer(m.get("count"), f"{path}.count", lo=0),
        creation_interval_ms=r.integer(m.get("creationIntervalMs"), f"{path}.creationIntervalMs", lo=0),
        workloads=tuple(
            _template(r, t, f"{path}.workloads[{i}]")
            for i, t in enumerate(r.seq(m.get("workloads"), f"{path}.workloads"))
        ),
    )


def _template(r: _Reader, node: Any, path: str) -> WorkloadTemplate:
    m = r.mapping(node, path, ("className", "runtimeMs", "priority", "request"), _UNSUPPORTED_WORKLOAD) or {}
    return WorkloadTemplate(
        class_name=r.class_name(m.get("className"), f"{path}.className"),
        runtime_ms=r.integer(m.get("runtimeMs"), f"{path}.runtimeMs", lo=0),
        priority=r.integer(m.get("priority"), f"{path}.priority", lo=_INT32_MIN, hi=_INT32_MAX),
        request=r.quantity(m.get("request"), f"{path}.request", required=True) or "0",
    )


def _check_size(r: _Reader, cfg: GeneratorConfig, path: str) -> None:
    """Refuse a scenario too large to build (checked before the names, which are built one by one)."""
    queues, workloads = cfg.cluster_queue_count, cfg.workload_count
    if queues > MAX_CLUSTER_QUEUES:
        r.fail(path, f"the counts generate {queues} ClusterQueues; pykueue simulates at most {MAX_CLUSTER_QUEUES}")
    if workloads > MAX_WORKLOADS:
        r.fail(path, f"the counts generate {workloads} Workloads; pykueue simulates at most {MAX_WORKLOADS}")


def _check_names(r: _Reader, cfg: GeneratorConfig) -> None:
    """Generated names must be valid and distinct, or upstream's creates would fail."""
    seen: dict[str, str] = {}
    for ci, cs in enumerate(cfg.cohorts):
        for qsi, qs in enumerate(cs.queues_sets):
            path = f"cohorts[{ci}].queuesSets[{qsi}]"
            longest = f"{qs.class_name}-{qsi}-{max(qs.count - 1, 0)}-{cs.class_name}-{max(cs.count - 1, 0)}"
            if len(longest) > 63:
                r.fail(f"{path}.className", f"generated namespace name {longest!r} exceeds 63 characters")
                continue
            for cidx in range(cs.count):
                for qi in range(qs.count):
                    name = f"{qs.class_name}-{qsi}-{qi}-{cs.class_name}-{cidx}"
                    if name in seen:
                        r.fail(path, f"generates ClusterQueue {name!r}, already generated by {seen[name]}")
                        return
                    seen[name] = path


def load_generator(path: str | Path) -> GeneratorConfig:
    """Read and validate an upstream ``generator.yaml``; raise ``GeneratorError`` naming the bad field."""
    source = str(path)
    data = read_config(path, GeneratorError)
    return parse_generator(data, source)


# ----------------------------------------------------------------------------------------- building


def format_ms(ms: int) -> str:
    """Exact Go-style duration in seconds: 100 -> ``0.1s``, 35000 -> ``35s``."""
    s, rest = divmod(ms, 1000)
    return f"{s}s" if rest == 0 else f"{s}.{rest:03d}".rstrip("0") + "s"


def _cluster_queue(name: str, cohort: str, flavor: str, qs: QueuesSet) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": MEASURED_RESOURCE, "nominalQuota": qs.nominal_quota}
    if qs.borrowing_limit is not None:
        quota["borrowingLimit"] = qs.borrowing_limit
    if qs.lending_limit is not None:
        quota["lendingLimit"] = qs.lending_limit
    preemption: dict[str, str] = {}
    if qs.reclaim_within_cohort is not None:
        preemption["reclaimWithinCohort"] = qs.reclaim_within_cohort
    if qs.within_cluster_queue is not None:
        preemption["withinClusterQueue"] = qs.within_cluster_queue
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": {CLASS_LABEL: qs.class_name, CLEANUP_LABEL: "true"}},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": preemption,
            "resourceGroups": [
                {"coveredResources": [MEASURED_RESOURCE], "flavors": [{"name": flavor, "resources": [quota]}]}
            ],
        },
    }


def build_manifests(cfg: GeneratorConfig) -> list[dict[str, Any]]:
    """Every object upstream's generator creates, setup first, then Workloads by arrival time.

    Setup objects (flavor, then per queue: ClusterQueue, Namespace, LocalQueue) exist from time 0.
    Workloads carry ``pykueue.dev/arrival`` and ``pykueue.dev/runtime``; equal arrivals keep generation
    order (cohort set, cohort, queue set, queue, workloads set, round, template), since upstream's
    concurrent goroutines give them no order of their own.
    """
    # Tens of thousands of small dicts trigger the cyclic GC over and over for nothing (they hold no
    # cycles); pausing it makes large-scale (50k workloads) several times faster.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return list(iter_manifests(cfg))
    finally:
        if gc_was_enabled:
            gc.enable()


def iter_manifests(cfg: GeneratorConfig) -> Iterator[dict[str, Any]]:
    """``build_manifests`` one manifest at a time, in the same order: a reader that consumes them as
    they come never holds a million Workloads' dicts at once. Each queue's workloads sets are streams
    already in (arrival, generation order); they are merged lazily."""
    yield {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": cfg.resource_flavor, "labels": {CLEANUP_LABEL: "true"}},
        "spec": {},
    }
    streams: list[Iterator[tuple[int, int, dict[str, Any]]]] = []
    seq = 0
    for cs in cfg.cohorts:
        for cidx in range(cs.count):
            cohort = f"{cs.class_name}-{cidx}"
            for qsi, qs in enumerate(cs.queues_sets):
                for qi in range(qs.count):
                    name = f"{qs.class_name}-{qsi}-{qi}-{cohort}"
                    yield _cluster_queue(name, cohort, cfg.resource_flavor, qs)
                    yield {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": name, "labels": {CLEANUP_LABEL: "true"}},
                    }
                    yield {
                        "apiVersion": KUEUE_API,
                        "kind": "LocalQueue",
                        "metadata": {"name": name, "namespace": name},
                        "spec": {"clusterQueue": name},
                    }
                    for wsi, ws in enumerate(qs.workloads_sets):
                        streams.append(_workloads(seq, name, wsi, ws))
                        seq += ws.count * len(ws.workloads)
    for _, _, manifest in heapq.merge(*streams):  # (arrival, unique number): a manifest is never compared
        yield manifest


def _workload_spec(ns: str, t: WorkloadTemplate) -> dict[str, Any]:
    return {
        "queueName": ns,
        "priority": t.priority,
        "podSets": [
            {
                "name": POD_SET_NAME,
                "count": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": CONTAINER_NAME, "resources": {"requests": {MEASURED_RESOURCE: t.request}}}
                        ],
                    }
                },
            }
        ],
    }


def _workloads(seq: int, ns: str, wsi: int, ws: WorkloadsSet) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """One workloads set of one queue as (arrival, generation number, manifest), made as they are read;
    the k-th creation (1-based) happens at k * interval, numbered from ``seq`` + 1."""
    interval = ws.creation_interval_ms
    # One spec object per template, shared by its workloads (they are equal): the loader validates and
    # converts a shared spec once, and a million workloads hold a few specs instead of a million.
    templates = [(i, t, str(t.runtime_ms), format_ms(t.runtime_ms), _workload_spec(ns, t))
                 for i, t in enumerate(ws.workloads)]
    k = 0
    for rnd in range(ws.count):
        for i, t, running_ms, runtime, spec in templates:
            k += 1
            arrival = k * interval
            seq += 1
            yield (
                arrival,
                seq,
                {
                    "apiVersion": KUEUE_API,
                    "kind": "Workload",
                    "metadata": {
                        "name": f"{t.class_name}-{wsi}-{rnd}-{i}",
                        "namespace": ns,
                        "labels": {RUNNING_TIME_LABEL: running_ms, CLASS_LABEL: t.class_name},
                        "annotations": {
                            ARRIVAL_ANNOTATION: format_ms(arrival),
                            RUNTIME_ANNOTATION: runtime,
                        },
                    },
                    "spec": spec,
                },
            )
