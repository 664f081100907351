"""Upstream's performance recorder summary, computed from what the simulator observed.

Mirrors ``test/performance/scheduler/runner/recorder/recorder.go`` and the checker's usage formula in
``test/performance/scheduler/checker/checker_test.go`` (Kueue v0.18):

Workloads, grouped by the ``kueue.x-k8s.io/performance-scheduler-class`` label:
  - ``timeToAdmit`` = admission time - creation time, in whole milliseconds. The recorder sets it on
    every not-admitted -> admitted transition, so a re-admitted workload counts its *last* admission.
    A workload never admitted counts 0 (and still counts in ``count``), as upstream.
  - ``timeToFinish`` = finish time - first observation (creation), 0 when it never finished.
  - class averages are integer divisions (Go ``int64 /``), truncating.

Cluster queues, grouped by the same class label:
  - each queue integrates ``usage x dt`` of the *first resource of the first flavor* (``cpu`` for
    generated scenarios), in milli-units x ms, from its first status event to its last one, counting
    an interval only when the usage at its start is positive. Usage is ``status.flavorsUsage``: what
    *admitted* workloads use, borrowed quota included, so it may exceed the nominal quota.
  - a class sums the integrals and the nominal quotas of its queues and takes the earliest first
    event and latest last event of its queues as the monitoring window;
    ``avgUsagePercent = used * 100 / (nominalQuota * window)``, i.e. usage relative to nominal quota
    (may exceed 100) averaged over the class's whole window.

``wallMs`` stands in for upstream's minimalkueue wall time: the virtual time at which the last
workload finished (the end of the simulation when some never finished).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from pykueue.perf.generator import CLASS_LABEL, quantity_value


@dataclass(frozen=True, slots=True)
class WorkloadObservation:
    """One workload as the recorder saw it; times in virtual seconds."""

    class_name: str  # its performance-scheduler-class label, "" when absent
    created_at: float
    admitted_at: float | None  # the LAST admission; None when never admitted
    finished_at: float | None = None
    evictions: int = 0
    name: str = ""  # NAMESPACE/NAME, informational
    cluster_queue: str = ""  # informational


@dataclass(frozen=True, slots=True)
class ClusterQueueObservation:
    """One cluster queue: usage of its measured resource (in the request's unit, e.g. cores) over time."""

    name: str
    class_name: str
    nominal_quota: float  # of the measured resource, same unit as usage
    # (time, usage from that time on), time-ordered; usage is 0 before the first point.
    usage: Sequence[tuple[float, float]] = field(default_factory=tuple)
    created_at: float = 0.0  # the queue's first status event
    last_event_at: float | None = None  # its last status change; None: its last usage change point


@dataclass(frozen=True, slots=True)
class PerfObservations:
    workloads: Sequence[WorkloadObservation]
    cluster_queues: Sequence[ClusterQueueObservation]
    end_time: float  # where the simulation stopped


def _ms(seconds: float) -> int:
    """Virtual times are ms-exact decimals; round away float noise before the integer maths."""
    return round(seconds * 1000)


def _milli(value: float) -> int:
    return round(value * 1000)


def _sorted(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in sorted(d)}


def _cq_state(cq: ClusterQueueObservation) -> tuple[int, int, int]:
    """(used in milli x ms, first event ms, last event ms) the way ``recordCQEvent`` accumulates it."""
    first = _ms(cq.created_at)
    usage = cq.usage
    ends = cq.last_event_at if cq.last_event_at is not None else usage[-1][0] if usage else None
    last = first if ends is None else max(_ms(ends), first)
    used = 0
    prev_t, prev_u = first, 0
    for t_s, u_s in usage:
        t, u = _ms(t_s), _milli(u_s)
        t = min(max(t, first), last)  # events outside the recorded window are not seen
        if prev_u > 0:
            used += prev_u * (t - prev_t)
        prev_t, prev_u = t, u
    if prev_u > 0:
        used += prev_u * (last - prev_t)
    return used, first, last


class UsagePoints(Sequence[tuple[float, float]]):
    """A queue's (time, usage) points as two arrays of doubles: 16 bytes a point where a tuple of two
    floats takes about 110 (a million workloads make two million points)."""

    __slots__ = ("times", "values")

    def __init__(self) -> None:
        self.times = array("d")
        self.values = array("d")

    def append(self, t: float, u: float) -> None:
        self.times.append(t)
        self.values.append(u)

    def __len__(self) -> int:
        return len(self.times)

    @overload
    def __getitem__(self, i: int) -> tuple[float, float]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[float, float]]: ...
    def __getitem__(self, i: int | slice) -> tuple[float, float] | list[tuple[float, float]]:
        if isinstance(i, slice):
            return list(zip(self.times[i], self.values[i], strict=True))
        return self.times[i], self.values[i]

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self.times, self.values, strict=True)


class WorkloadClasses:
    """The workload half of the summary, folded one workload at a time: a million workloads need
    not be held as observations to be summarised."""

    __slots__ = ("classes", "all_finished", "last_finish", "count")

    def __init__(self) -> None:
        self.classes: dict[str, list[int]] = {}  # class -> [count, total admit, max admit, total finish, evictions]
        self.all_finished = True
        self.last_finish = 0
        self.count = 0

    def add(self, class_name: str, created_at: float, admitted_at: float | None, finished_at: float | None,
            evictions: int) -> None:
        self.count += 1
        created = _ms(created_at)
        admit = max(_ms(admitted_at) - created, 0) if admitted_at is not None else 0
        if finished_at is not None:
            finished = _ms(finished_at)
            finish = max(finished - created, 0)
            if finished > self.last_finish:
                self.last_finish = finished
        else:
            finish = 0
            self.all_finished = False
        c = self.classes.get(class_name)
        if c is None:
            self.classes[class_name] = [1, admit, admit, finish, evictions]
        else:
            c[0] += 1
            c[1] += admit
            if admit > c[2]:
                c[2] = admit
            c[3] += finish
            c[4] += evictions


def summarize(obs: PerfObservations) -> dict[str, Any]:
    """The ``summary`` object of a ``--generator`` simulation; keys sorted at every level."""
    wl = WorkloadClasses()
    for o in obs.workloads:
        wl.add(o.class_name, o.created_at, o.admitted_at, o.finished_at, o.evictions)
    return _summary(obs.cluster_queues, wl, obs.end_time)


def _summary(cluster_queues: Sequence[ClusterQueueObservation], wl: WorkloadClasses,
             end_time: float) -> dict[str, Any]:
    groups: dict[str, list[int]] = {}  # class -> [used, quota, first, last, queues]
    for cq in cluster_queues:
        used, first, last = _cq_state(cq)
        g = groups.get(cq.class_name)
        if g is None:
            groups[cq.class_name] = [used, _milli(cq.nominal_quota), first, last, 1]
        else:
            g[0] += used
            g[1] += _milli(cq.nominal_quota)
            g[2] = min(g[2], first)
            g[3] = max(g[3], last)
            g[4] += 1
    cq_classes: dict[str, Any] = {}
    for name, (used, quota, first, last, queues) in groups.items():
        window = last - first
        percent = round(used * 100 / (quota * window), 4) if quota > 0 and window > 0 else None
        cq_classes[name] = _sorted(
            {
                "avgUsagePercent": percent,
                "clusterQueues": queues,
                "cpuAverageUsage": used // window if window > 0 else 0,
                "cpuUsed": used,
                "firstEventMs": first,
                "lastEventMs": last,
                "nominalQuota": quota,
            }
        )
    wl_classes = {
        name: _sorted(
            {
                "avgTimeToAdmissionMs": total_admit // count,
                "avgTimeToFinishMs": total_finish // count,
                "count": count,
                "maxTimeToAdmissionMs": max_admit,
                "totalEvictions": evictions,
            }
        )
        for name, (count, total_admit, max_admit, total_finish, evictions) in wl.classes.items()
    }
    wall = wl.last_finish if wl.count and wl.all_finished else _ms(end_time)
    return {
        "clusterQueueClasses": _sorted(cq_classes),
        "wallMs": wall,
        "workloadClasses": _sorted(wl_classes),
    }


# ------------------------------------------------------------------------- from a simulation result


def _quantity(text: Any) -> float:
    return quantity_value(str(text))


def _measured(cq: dict[str, Any]) -> tuple[str | None, str | None, float]:
    """(flavor, resource, nominal quota) of the first resource of the first flavor, as upstream reads
    ``spec.resourceGroups[0].flavors[0].resources[0]`` and ``status.flavorsUsage[0].resources[0]``."""
    for rg in cq.get("spec", {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for res in fl.get("resources") or []:
                return fl.get("name"), res.get("name"), _quantity(res.get("nominalQuota", 0))
        break
    return None, None, 0.0


def _request(wl: dict[str, Any], resource: str) -> float:
    total = 0.0
    for ps in wl.get("spec", {}).get("podSets") or []:
        per_pod = 0.0
        for c in ps.get("template", {}).get("spec", {}).get("containers") or []:
            req = (c.get("resources") or {}).get("requests") or {}
            if resource in req:
                per_pod += _quantity(req[resource])
        total += per_pod * int(ps.get("count", 1))
    return total


@dataclass(frozen=True, slots=True)
class ManifestFacts:
    """What the summary reads from the manifests a run was made of, without the manifests: a million
    generated Workloads are about 2 KB each as dicts, held to the end of the run only for this."""

    cluster_queues: dict[str, tuple[str, str | None, float]]  # name -> (class, measured resource, nominal)
    # namespace -> name -> (class, total request per measured resource): by the manifests' own name
    # strings (the Workloads keep the same ones), not a NAMESPACE/NAME string more per workload.
    workloads: dict[str, dict[str, tuple[str, dict[str, float]]]]

    def workload(self, key: str) -> tuple[str, dict[str, float]] | None:
        """The facts of the Workload NAMESPACE/NAME ``key``, None for one the manifests do not have."""
        namespace, _, name = key.partition("/")
        names = self.workloads.get(namespace)
        return None if names is None else names.get(name)


def manifest_facts(manifests: Sequence[dict[str, Any]]) -> ManifestFacts:
    """The facts of every manifest (ClusterQueues may come anywhere in the list)."""
    collector = FactsCollector()
    for m in manifests:
        if m.get("kind") == "ClusterQueue":
            collector.add(m)
    for m in manifests:
        if m.get("kind") == "Workload":
            collector.add(m)
    return collector.facts()


class FactsCollector:
    """``manifest_facts`` taken from manifests as they pass (``watch``), so that a generated run never
    holds its manifests: the ClusterQueues must all come before the first Workload, as the generator
    writes them (the measured resources are known by then)."""

    def __init__(self) -> None:
        self.cq_specs: dict[str, tuple[str, str | None, float]] = {}
        self.workloads: dict[str, dict[str, tuple[str, dict[str, float]]]] = {}
        self._measured: list[str] | None = None  # fixed at the first Workload
        # Equal facts are one shared tuple (read only): a generated scenario has a few distinct ones for
        # a million workloads, about 260 bytes each when every workload had its own.
        self._shared: dict[tuple[str, tuple[tuple[str, float], ...]], Any] = {}
        # a spec object shared by many (the generator's), kept alive with its requests so ids stay unique
        self._by_spec: dict[int, tuple[object, tuple[tuple[str, float], ...]]] = {}

    def add(self, m: dict[str, Any]) -> None:
        kind = m.get("kind")
        if kind == "ClusterQueue":
            if self._measured is not None:
                raise ValueError("a ClusterQueue after a Workload: the measured resources were already fixed")
            meta = m.get("metadata") or {}
            _, resource, nominal = _measured(m)
            self.cq_specs[meta["name"]] = ((meta.get("labels") or {}).get(CLASS_LABEL, ""), resource, nominal)
        elif kind == "Workload":
            measured = self._measured
            if measured is None:
                measured = self._measured = sorted({r for _, r, _ in self.cq_specs.values() if r})
            meta = m.get("metadata") or {}
            namespace = meta.get("namespace", "default")
            names = self.workloads.get(namespace)
            if names is None:
                names = self.workloads[namespace] = {}
            cls = (meta.get("labels") or {}).get(CLASS_LABEL, "")
            spec = m.get("spec")
            known = self._by_spec.get(id(spec)) if spec is not None else None
            if known is not None and known[0] is spec:
                requests = known[1]
            else:
                requests = tuple((r, _request(m, r)) for r in measured)
                if spec is not None:
                    self._by_spec[id(spec)] = (spec, requests)
            # ``Any``, not the tuple type: compiled (mypyc), a fixed-size tuple is held unboxed and boxed
            # anew where it is stored, a tuple per workload instead of the one shared.
            fact: Any = self._shared.get((cls, requests))
            if fact is None:
                self._shared[(cls, requests)] = fact = (cls, dict(requests))
            names[meta["name"]] = fact

    def watch(self, manifests: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """``manifests`` unchanged, each added to the facts as it passes."""
        for m in manifests:
            self.add(m)
            yield m

    def facts(self) -> ManifestFacts:
        return ManifestFacts(self.cq_specs, self.workloads)


class Recorder:
    """Reads a ``SimulationResult``'s workload and event entries one at a time, as they are written,
    and gives the summary at the end (``observations_from_result`` says what it derives).

    With ``keep_workloads`` it keeps each workload's observation (for ``observations``); without, it
    folds them into ``WorkloadClasses`` as they pass, so a streamed result of a million workloads is
    summarised without holding any of them."""

    def __init__(self, facts: ManifestFacts, keep_workloads: bool = False) -> None:
        self.cq_specs, self.facts = facts.cluster_queues, facts
        self.kept: list[WorkloadObservation] | None = [] if keep_workloads else None
        self.classes = WorkloadClasses()
        self.last_event: dict[str, float] = {}
        self.usage: dict[str, float] = {}
        self.points: dict[str, UsagePoints] = {}
        self.counted: dict[str, tuple[str, float]] = {}  # workload -> (cq, amount) while admitted
        self.done: dict[str, Any] | None = None  # the summary, once asked for

    def workload(self, w: dict[str, Any]) -> None:
        key = f"{w['namespace']}/{w['name']}"
        names = self.facts.workloads.get(w["namespace"])
        meta = None if names is None else names.get(w["name"])
        cls = meta[0] if meta is not None else ""
        cq = w.get("clusterQueue") or ""
        created = w["createdAt"]
        if cq:
            last = self.last_event.get(cq)
            if last is None or created > last:
                self.last_event[cq] = created
        evictions = int(w.get("evictions") or 0)
        if self.kept is not None:
            self.kept.append(WorkloadObservation(
                class_name=cls, created_at=created, admitted_at=w.get("admittedAt"),
                finished_at=w.get("finishedAt"), evictions=evictions, name=key, cluster_queue=cq))
        else:
            self.classes.add(cls, created, w.get("admittedAt"), w.get("finishedAt"), evictions)

    def event(self, e: dict[str, Any]) -> None:
        cq, key, t, typ = e.get("clusterQueue") or "", e.get("workload", ""), e["time"], e["type"]
        if cq:
            last = self.last_event.get(cq)
            if last is None or t > last:
                self.last_event[cq] = t
        if typ == "Admitted" and key not in self.counted and cq in self.cq_specs:
            resource = self.cq_specs[cq][1]
            meta = self.facts.workload(key) if resource else None
            amount = meta[1][resource] if meta is not None and resource is not None else 0.0
            self.counted[key] = (cq, amount)
        elif typ in ("Finished", "Evicted") and key in self.counted:
            cq, amount = self.counted.pop(key)
            amount = -amount
        else:
            return
        if amount:
            self.usage[cq] = total = self.usage.get(cq, 0.0) + amount
            points = self.points.get(cq)
            if points is None:
                self.points[cq] = points = UsagePoints()
            points.append(t, total)

    def cluster_queues(self) -> list[ClusterQueueObservation]:
        return [
            ClusterQueueObservation(
                name=name,
                class_name=cls,
                nominal_quota=nominal,
                usage=self._points(name),
                created_at=0.0,
                last_event_at=self.last_event.get(name),
            )
            for name, (cls, _, nominal) in sorted(self.cq_specs.items())
        ]

    def _points(self, name: str) -> Sequence[tuple[float, float]]:
        points = self.points.get(name)
        if points is None:
            return ()
        return tuple(points) if self.kept is not None else points

    def observations(self, end_time: float) -> PerfObservations:
        assert self.kept is not None, "observations need keep_workloads"
        return PerfObservations(workloads=self.kept, cluster_queues=self.cluster_queues(), end_time=end_time)

    def summary(self, end_time: float) -> dict[str, Any]:
        """The summary of everything seen so far (kept in ``done``)."""
        if self.kept is not None:
            self.done = summarize(self.observations(end_time))
        else:
            self.done = _summary(self.cluster_queues(), self.classes, end_time)
        return self.done


def observations_from_result(result: dict[str, Any],
                             manifests: Sequence[dict[str, Any]] | ManifestFacts) -> PerfObservations:
    """Derive the observations from a ``SimulationResult`` and the manifests it was run on (or their
    ``manifest_facts``).

    Usage of a cluster queue rises by a workload's request at its ``Admitted`` event and falls at its
    ``Finished`` or ``Evicted`` event (``status.flavorsUsage`` counts admitted workloads only). This
    assumes the measured resource is served by the queue's first flavor only, which holds for
    everything upstream's generator creates (one flavor). A queue's last status change is its last
    event or the last creation of one of its workloads (which changes ``pendingWorkloads``).
    """
    facts = manifests if isinstance(manifests, ManifestFacts) else manifest_facts(manifests)
    recorder = Recorder(facts, keep_workloads=True)
    for w in result.get("workloads") or []:
        recorder.workload(w)
    for e in result.get("events") or []:
        recorder.event(e)
    return recorder.observations(float(result.get("endTime") or 0.0))
