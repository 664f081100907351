"""Deterministic virtual-time driver of the engine (``pykueue simulate``).

Time is kept in integer microseconds so that decimal durations (0.1 s steps) land on exactly the same
instants. At each instant the instant's events take effect first (arrivals, finishes, readiness,
timeouts, timed object changes, backoff expiries), then the engine schedules until nothing changes,
and only then does the clock move on.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from pykueue.api.durations import parse_duration
from pykueue.api.inputs import NEVER_READY, Change, Inputs, SubmittedWorkload
from pykueue.api.timing import UNREADY_AFTER, UNREADY_FOR
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.events import Event
from pykueue.engine.workload import State
from pykueue.sim.checks import ANNOTATION as CHECKS_ANNOTATION
from pykueue.sim.checks import Script, parse_script, step_for

US = 1_000_000

# Kinds of timed work, in the order they take effect when they share an instant and a sequence.
_CHANGE, _ARRIVAL, _FINISH, _READY, _TIMEOUT, _CHECK, _UNREADY = range(7)


def to_us(seconds: float) -> int:
    return round(seconds * US)


@dataclass(slots=True)
class LoggedEvent:
    time_us: int
    event: Event


@dataclass(slots=True)
class UsageSample:
    """State of one cluster queue after an instant (recorded when it changed), for reports."""

    time_us: int
    cluster_queue: str
    usage: dict[tuple[str, str], int]
    pending: int = 0
    weighted_share: int = 0


@dataclass
class Run:
    """Everything a simulation produced: the engine's final state and the timed event log."""

    engine: Engine
    inputs: Inputs
    end_us: int
    log: list[LoggedEvent] = field(default_factory=list)
    samples: list[UsageSample] = field(default_factory=list)
    created_us: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


class Simulation:
    def __init__(self, inputs: Inputs, *, until: float | None = None, record_usage: bool = False) -> None:
        self.inputs = inputs
        self.until_us = None if until is None else to_us(until)
        self.record_usage = record_usage
        self.engine = Engine(inputs.config)
        self._queue: list[tuple[int, int, int, object]] = []
        self._seq = 0
        self._subs: dict[str, SubmittedWorkload] = {}
        self._epoch: dict[str, int] = {}  # quota reservations so far, per workload: cancels stale timers
        self._scripts: dict[str, Script] = {}
        self._last_sample: dict[str, tuple] = {}
        self.run_data = Run(self.engine, inputs, 0)

    def _at(self, time_us: int, kind: int, payload: object) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time_us, self._seq, kind, payload))

    # -------------------------------------------------------------------------------------- setup

    def _setup(self) -> None:
        engine, inp = self.engine, self.inputs
        with engine.bulk():
            for ns in inp.namespaces:
                engine.apply_namespace(ns)
            for rf in inp.resource_flavors:
                engine.apply_resource_flavor(rf)
            for ac in inp.admission_checks:
                engine.apply_admission_check(ac)
            for c in inp.cohorts:
                engine.apply_cohort(c)
            for cq in inp.cluster_queues:
                engine.apply_cluster_queue(cq)
            for lq in inp.local_queues:
                engine.apply_local_queue(lq)
        for sub in inp.workloads:
            key = sub.workload.key
            self._subs[key] = sub
            if CHECKS_ANNOTATION in sub.annotations:
                self._scripts[key] = parse_script(sub.annotations[CHECKS_ANNOTATION])
            self.run_data.kinds[key] = sub.workload.kind
            arrival = to_us(sub.arrival)
            self.run_data.created_us[key] = to_us(sub.workload.creation_time)
            self._at(max(arrival, 0), _ARRIVAL, sub)
        for change in inp.changes:
            self._at(to_us(change.at), _CHANGE, change)

    # ---------------------------------------------------------------------------------------- run

    def run(self) -> Run:
        self._setup()
        engine = self.engine
        now_us = 0
        last_us = 0
        while True:
            wake = engine.next_wakeup()
            next_us = self._queue[0][0] if self._queue else None
            if wake is not None:
                wake_us = to_us(wake)
                next_us = wake_us if next_us is None else min(next_us, wake_us)
            if next_us is None:
                break
            if self.until_us is not None and next_us > self.until_us:
                break
            now_us = next_us
            now = now_us / US
            while self._queue and self._queue[0][0] == now_us:
                _, _, kind, payload = heapq.heappop(self._queue)
                self._handle(kind, payload, now_us)
            self._record(now_us, engine.take_events())
            self._record(now_us, engine.schedule(now))
            last_us = now_us
            if self.record_usage:
                self._sample(now_us)
        self.run_data.end_us = self.until_us if self.until_us is not None else last_us
        return self.run_data

    def _record(self, now_us: int, events: list[Event]) -> None:
        log = self.run_data.log
        for e in events:
            log.append(LoggedEvent(now_us, e))
            if e.type == ev.QUOTA_RESERVED:
                self._on_reserved(e.workload, now_us)
            elif e.type == ev.ADMITTED:
                self._on_admitted(e.workload, now_us)

    def _sample(self, now_us: int) -> None:
        engine = self.engine
        fair = engine.config.fair_sharing.enable
        for name, cq in engine.cqs.items():
            usage = {fr: v for fr, v in cq.node.usage.items() if v}
            pending = len(cq.pending)
            share = engine.weighted_share(name) if fair else 0
            state = (usage, pending, share)
            if self._last_sample.get(name) != state:
                self._last_sample[name] = state
                self.run_data.samples.append(UsageSample(now_us, name, usage, pending, share))

    # ----------------------------------------------------------------------------------- handlers

    def _handle(self, kind: int, payload: object, now_us: int) -> None:
        engine = self.engine
        now = now_us / US
        if kind == _ARRIVAL:
            assert isinstance(payload, SubmittedWorkload)
            info = engine.add_workload(payload.workload, now)
            if info.state is State.ADMITTED:
                self._epoch[info.key] = self._epoch.get(info.key, 0) + 1
                self._on_admitted(info.key, now_us, preadmitted=True)
        elif kind == _FINISH:
            key, epoch = payload  # type: ignore[misc]
            if self._epoch.get(key) == epoch:
                info = engine.workloads.get(key)
                if info is not None and info.state is State.ADMITTED:
                    engine.finish_workload(key, now)
        elif kind == _READY:
            key, epoch = payload  # type: ignore[misc]
            if self._epoch.get(key) == epoch:
                engine.mark_pods_ready(key, now)
        elif kind == _TIMEOUT:
            key, epoch = payload  # type: ignore[misc]
            if self._epoch.get(key) == epoch:
                engine.pods_ready_timeout(key, now)
        elif kind == _UNREADY:
            key, epoch = payload  # type: ignore[misc]
            if self._epoch.get(key) == epoch:
                self._on_unready(key, epoch, now_us)
        elif kind == _CHECK:
            key, epoch, check, state = payload  # type: ignore[misc]
            if self._epoch.get(key) == epoch:
                engine.set_check_state(key, check, state, now)
        elif kind == _CHANGE:
            assert isinstance(payload, Change)
            self._apply_change(payload, now)

    def _on_reserved(self, key: str, now_us: int) -> None:
        """A new quota reservation: timers of earlier ones are void; script this one's checks."""
        epoch = self._epoch.get(key, 0) + 1
        self._epoch[key] = epoch
        info = self.engine.workloads.get(key)
        script = self._scripts.get(key)
        if info is None or not info.check_states or script is None:
            return
        for check in sorted(info.check_states):
            step = step_for(script, check, epoch)
            if step is not None:
                state, delay = step
                self._at(now_us + to_us(delay), _CHECK, (key, epoch, check, state))

    def _on_admitted(self, key: str, now_us: int, *, preadmitted: bool = False) -> None:
        sub = self._subs.get(key)
        if sub is None:
            return
        epoch = self._epoch.get(key, 0)
        if sub.runtime is not None:
            self._at(now_us + to_us(sub.runtime), _FINISH, (key, epoch))
        wfpr = self.engine.config.wait_for_pods_ready
        if wfpr.enable and not preadmitted:
            if sub.ready_after != NEVER_READY and math.isfinite(sub.ready_after):
                self._at(now_us + to_us(sub.ready_after), _READY, (key, epoch))
            self._at(now_us + to_us(wfpr.timeout_seconds), _TIMEOUT, (key, epoch))
        unready = sub.annotations.get(UNREADY_AFTER)
        if unready is not None:
            self._at(now_us + to_us(parse_duration(unready)), _UNREADY, (key, epoch))

    def _on_unready(self, key: str, epoch: int, now_us: int) -> None:
        """Pods stopped being ready (``pykueue.dev/unready-after``): the workload must recover within
        waitForPodsReady.recoveryTimeout, or be evicted like a pods-ready timeout."""
        engine = self.engine
        engine.mark_pods_not_ready(key, now_us / US)
        sub = self._subs[key]
        back = sub.annotations.get(UNREADY_FOR, "never").strip()
        if back != "never":
            self._at(now_us + to_us(parse_duration(back)), _READY, (key, epoch))
        recovery = engine.config.wait_for_pods_ready.recovery_timeout_seconds
        if engine.config.wait_for_pods_ready.enable and recovery:
            self._at(now_us + to_us(recovery), _TIMEOUT, (key, epoch))

    def _apply_change(self, change: Change, now: float) -> None:
        engine = self.engine
        obj = change.obj
        if change.kind == "ClusterQueue":
            if change.delete:
                engine.delete_cluster_queue(change.key)
            else:
                assert isinstance(obj, model.ClusterQueue)
                engine.apply_cluster_queue(obj, now)
        elif change.kind == "LocalQueue":
            if change.delete:
                engine.delete_local_queue(change.key)
            else:
                assert isinstance(obj, model.LocalQueue)
                engine.apply_local_queue(obj, now)
        elif change.kind == "Cohort":
            if change.delete:
                engine.delete_cohort(change.key)
            else:
                assert isinstance(obj, model.Cohort)
                engine.apply_cohort(obj)
        elif change.kind == "ResourceFlavor":
            if change.delete:
                engine.delete_resource_flavor(change.key)
            else:
                assert isinstance(obj, model.ResourceFlavor)
                engine.apply_resource_flavor(obj)
        elif change.kind == "Namespace":
            if change.delete:
                engine.delete_namespace(change.key)
            else:
                assert isinstance(obj, model.Namespace)
                engine.apply_namespace(obj)
        elif change.kind == "AdmissionCheck":
            if change.delete:
                engine.delete_admission_check(change.key)
            else:
                assert isinstance(obj, model.AdmissionCheck)
                engine.apply_admission_check(obj)
        elif change.kind in ("Workload", "Job"):
            if change.delete:
                engine.delete_workload(change.key)
            elif isinstance(obj, SubmittedWorkload):
                info = engine.workloads.get(change.key)
                if info is not None:
                    engine.set_active(change.key, obj.workload.active, now)
                    engine.set_reclaimable_pods(change.key, obj.workload.reclaimable_pods, now)
