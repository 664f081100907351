"""Deterministic virtual-time driver of the engine (``pykueue simulate``).

Time is kept in integer microseconds end to end (the engine's unit too) so that decimal durations
(0.1 s steps) land on exactly the same instants and a backoff expires at exactly the instant it names.
Durations read in seconds are converted once, on the way in. At each instant the instant's events take
effect first (arrivals, finishes, readiness, timeouts, timed object changes, backoff expiries), then
the engine schedules until nothing changes, and only then does the clock move on.

A run that cannot settle stops with ``EngineError`` (exit status 3): a loop at one instant is caught by
the engine (``MAX_ADMISSIONS_PER_INSTANT``); a configuration that repeats forever over time (a check
that always answers Retry, pods that are never ready and no requeuing limit) is caught here, without
``--until`` only. Progress is an arrival, a timed change, a finish or a deactivation. A workload
evicted by its own timers (pods-ready timeout, admission check Retry) more than ``IDLE_EVICTIONS``
times since the last progress (plus the requeuing limit and its longest check script, which make a
finite series longer) stops the run once nothing else can happen: no arrival or timed change left,
and no timer pending for a workload that holds quota and was not evicted since the last progress (a
running job's finish could still change the outcome). ``IDLE_EVICTIONS_MAX`` such evictions stop it
in any case, so that a fast cycle waiting for a distant event does not run for hours.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from pykueue.api.inputs import NEVER_READY, Change, Inputs, SubmittedWorkload
from pykueue.api.timing import WORKLOAD_LIKE
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.events import EngineError, Event
from pykueue.engine.model import US, format_us, seconds_to_us
from pykueue.engine.quota import FR
from pykueue.engine.workload import State
from pykueue.sim import elastic
from pykueue.sim.checks import Script, step_for
from pykueue.sim.event_log import EventLog, LoggedEvent  # noqa: F401 - LoggedEvent: read from here too

__all__ = ["US", "IDLE_EVICTIONS", "IDLE_EVICTIONS_MAX", "NotSettling", "Run", "Simulation", "StepBudgetExceeded", "to_us"]

# Kinds of timed work, in the order they take effect when they share an instant and a sequence.
class Timer(IntEnum):
    """What a queued simulator event is; its payload: a Change, a SubmittedWorkload, or for the
    workload timers (key, epoch[, check, state]) where an old epoch means the timer was cancelled."""

    CHANGE = 0
    ARRIVAL = 1
    FINISH = 2
    READY = 3
    CHECK = 4
    UNREADY = 5


_CHANGE, _ARRIVAL, _FINISH, _READY, _CHECK, _UNREADY = Timer

# Evictions of one workload by its own timers since the last progress after which a run without --until
# stops (exit 3) once nothing else can happen. A series that ends by itself is shorter: its timers fire
# the same way at every admission, so only the requeuing limit or a check script can end it, and their
# lengths are added; anything else that could end it (an arrival, a timed change, a running job's finish)
# is waited for, up to IDLE_EVICTIONS_MAX.
IDLE_EVICTIONS = 100
IDLE_EVICTIONS_MAX = 10_000
_OWN_TIMER_EVICTIONS = (ev.EVICTED_PODS_READY_TIMEOUT, ev.EVICTED_ADMISSION_CHECK)


def to_us(seconds: float) -> int:
    """A duration read in seconds, as the integer microseconds the simulator and engine keep."""
    return seconds_to_us(seconds)


class NotSettling(EngineError):
    """The configuration would repeat forever over virtual time (exit status 3, like a loop at one
    instant)."""


class StepBudgetExceeded(Exception):
    """More instants than the caller's ``step_budget`` (tests and fuzzing: a hang made visible)."""


class _Idle(NamedTuple):
    """Evictions of one workload by its own timers since the last progress."""

    times: int
    first_us: int
    reasons: tuple[str, ...]


@dataclass(slots=True)
class UsageSample:
    """State of one cluster queue after an instant (recorded when it changed), for reports."""

    time_us: int
    cluster_queue: str
    usage: dict[FR, int]
    pending: int = 0
    weighted_share: int = 0


@dataclass
class Run:
    """Everything a simulation produced: the engine's final state and the timed event log."""

    engine: Engine
    inputs: Inputs
    end_us: int
    log: EventLog = field(default_factory=EventLog)
    samples: list[UsageSample] = field(default_factory=list)
    reasons: list[ReasonChange] = field(default_factory=list)  # with record_reasons: each reason change


@dataclass(slots=True, frozen=True)
class ReasonChange:
    """A workload's QuotaReserved=False reason as it stood after an instant (None: it holds quota or
    finished), recorded only when it differs from the last one recorded for that workload."""

    time_us: int
    workload: str
    reason: str | None
    message: str | None = None


class Simulation:
    def __init__(self, inputs: Inputs, *, until: float | None = None, record_usage: bool = False,
                 step_budget: int | None = None, record_reasons: bool = False) -> None:
        self.inputs = inputs
        self.until_us = None if until is None else to_us(until)
        self.record_usage = record_usage
        self.record_reasons = record_reasons
        self._last_reason: dict[str, str | None] = {}
        self.step_budget = step_budget
        self.steps = 0  # instants played (each one scheduling call)
        self._inputs_left = 0  # arrivals and timed changes still queued
        self._idle: dict[str, _Idle] = {}
        self._disturbed: set[str] = set()  # workloads evicted (for any reason) since the last progress
        self.idle_bound = IDLE_EVICTIONS
        self.idle_bound_max = IDLE_EVICTIONS_MAX
        self.engine = Engine(inputs.config)
        # Timers (finish, ready, checks) in a heap; the inputs (arrivals, timed changes), all known at the
        # start, sorted once and taken from the end: a million arrivals never pass through a heap of a
        # million. Inputs are numbered before any timer, so at one instant they come first, in order.
        self._queue: list[tuple[int, int, int, object]] = []
        self._inputs: list[tuple[int, int, int, object]] = []
        self._seq = 0
        self._subs: dict[str, SubmittedWorkload] = {}
        # An elastic Job's slices (workload slicing): its first workload's key -> the keys of its slices,
        # oldest first (``elastic.py``)
        self._slices: dict[str, list[str]] = {}
        self._epoch: dict[str, int] = {}  # quota reservations so far, per workload: cancels stale timers
        self._scripts: dict[str, Script] = {}
        self._last_sample: dict[str, tuple] = {}
        self.run_data = Run(self.engine, inputs, 0)
        # A driver of several clusters (``multicluster``): shown every event as it is recorded, and
        # asked whether a workload's pods run in another cluster (then no runtime or readiness here).
        self.observer: Callable[[int, list[Event]], None] | None = None
        self.runs_elsewhere: Callable[[str], bool] | None = None

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
            if sub.checks:
                self._scripts[key] = sub.checks
            self._seq += 1
            self._inputs.append((max(to_us(sub.arrival), 0), self._seq, _ARRIVAL, sub))
        for change in inp.changes:
            self._seq += 1
            self._inputs.append((to_us(change.at), self._seq, _CHANGE, change))
        self._inputs.sort(reverse=True)  # (time, number) is unique: the payloads are never compared
        self._inputs_left = len(inp.workloads) + len(inp.changes)
        limit = engine.config.wait_for_pods_ready.requeuing.backoff_limit_count
        longest = max((len(steps) for script in self._scripts.values() for steps in script.values()), default=0)
        self.idle_bound = IDLE_EVICTIONS + (limit or 0) + longest
        self.idle_bound_max = IDLE_EVICTIONS_MAX + (limit or 0) + longest

    # ---------------------------------------------------------------------------------------- run

    def run(self) -> Run:
        self.start()
        last_us = 0
        while True:
            next_us = self.next_time()
            if next_us is None:
                break
            if self.until_us is not None and next_us > self.until_us:
                break
            self.steps += 1
            if self.step_budget is not None and self.steps > self.step_budget:
                raise StepBudgetExceeded(f"more than {self.step_budget} steps (at {format_us(next_us)})")
            self.take_instant(next_us)
            try:
                self.schedule(next_us)
                last_us = next_us
                self.after_instant(next_us)
            except EngineError:
                self.stopped(next_us)
                raise
        self.finish(last_us)
        return self.run_data

    # The steps of ``run``, for a driver of several simulations on one clock (``multicluster``).

    def start(self) -> None:
        self._setup()
        if self.record_reasons:
            self.engine.watch_reasons()

    def next_time(self) -> int | None:
        """The next instant something is due: an input, a timer, or the engine's own wakeup."""
        queue, inputs = self._queue, self._inputs
        wake = self.engine.next_wakeup()
        next_us = queue[0][0] if queue else None
        if inputs and (next_us is None or inputs[-1][0] < next_us):
            next_us = inputs[-1][0]
        if wake is not None:
            next_us = wake if next_us is None else min(next_us, wake)
        return next_us

    def take_instant(self, now_us: int) -> None:
        """The instant's inputs and timers take effect (before any scheduling at that instant)."""
        queue, inputs = self._queue, self._inputs
        while inputs and inputs[-1][0] == now_us:
            _, _, kind, payload = inputs.pop()
            self._handle(kind, payload, now_us)
        while queue and queue[0][0] == now_us:
            _, _, kind, payload = heapq.heappop(queue)
            self._handle(kind, payload, now_us)
        self._record(now_us, self.engine.take_events())

    def schedule(self, now_us: int) -> bool:
        """Scheduling until a cycle changes nothing; whether anything happened (events were recorded)."""
        events = self.engine.schedule(now_us)
        self._record(now_us, events)
        return bool(events)

    def after_instant(self, now_us: int) -> None:
        """What is sampled once the instant has settled, and the check of a run that never settles."""
        if self.record_usage:
            self._sample(now_us)
        if self.record_reasons:
            self._record_reasons(now_us)
        if self._idle and self.until_us is None:
            self._check_settling(now_us)

    def stopped(self, now_us: int) -> None:
        """Keep the run so far for the caller (``run_data``): the events up to the stop show the loop."""
        self._record(now_us, self.engine.take_events())
        if self.record_usage:
            self._sample(now_us)
        self.run_data.end_us = now_us

    def finish(self, last_us: int) -> None:
        # endTime is the time of the last event: an instant where only a stale timer fired (the finish
        # of a workload deleted meanwhile, say) changed nothing and does not move it.
        last_event_us = self.run_data.log.last_time_us() or 0
        self.run_data.end_us = self.until_us if self.until_us is not None else min(last_us, last_event_us)

    def _record_reasons(self, now_us: int) -> None:
        """The reasons of the workloads the engine marked as possibly changed in this instant."""
        watch = self.engine.watch_reasons()
        if not watch:
            return
        last, out = self._last_reason, self.run_data.reasons
        for info in sorted(watch, key=lambda i: i.seq):
            reason, message = self.engine.condition_of(info)
            if info.key not in last and reason is None:
                last[info.key] = None
                continue
            if last.get(info.key, "") != reason:
                last[info.key] = reason
                out.append(ReasonChange(now_us, info.key, reason, message or None))
        watch.clear()

    def _record(self, now_us: int, events: list[Event]) -> None:
        self.run_data.log.record(now_us, events)
        if self.observer is not None and events:
            self.observer(now_us, events)
        for e in events:
            if e.type == ev.QUOTA_RESERVED:
                self._on_reserved(e.workload, now_us)
            elif e.type == ev.ADMITTED:
                self._on_admitted(e.workload, now_us)
            elif e.type == ev.EVICTED:
                self._disturbed.add(e.workload)
                if e.reason in _OWN_TIMER_EVICTIONS:
                    idle = self._idle.get(e.workload)
                    if idle is None:
                        self._idle[e.workload] = _Idle(1, now_us, (e.reason,))
                    else:
                        reasons = idle.reasons if e.reason in idle.reasons else (*idle.reasons, e.reason)
                        self._idle[e.workload] = _Idle(idle.times + 1, idle.first_us, reasons)
            elif e.type in (ev.FINISHED, ev.DEACTIVATED):
                self._progress()

    def _progress(self) -> None:
        self._idle.clear()
        self._disturbed.clear()

    def _check_settling(self, now_us: int) -> None:
        """Stop a run that repeats forever: see the module's docstring."""
        key, idle = max(self._idle.items(), key=lambda item: item[1].times)
        if idle.times <= self.idle_bound:
            return
        head = (f"requeue loop: workload {key} was evicted ({', '.join(idle.reasons)}) {idle.times} times "
                f"from {format_us(idle.first_us)} to {format_us(now_us)} while no workload arrived, finished or was "
                "deactivated")
        if idle.times > self.idle_bound_max:
            raise NotSettling(f"{head}; stopped at the bound of {self.idle_bound_max} such evictions although "
                              "other work is still scheduled (--until bounds the run)")
        if not self._inputs_left and not self._undisturbed_timers():
            raise NotSettling(f"{head}, and nothing else can happen; the configuration would requeue it forever "
                              "(--until bounds the run)")

    def _undisturbed_timers(self) -> bool:
        """Whether a workload holding quota, not evicted since the last progress, has a timer pending:
        a running job that will finish, a check that will answer. It may still change the outcome."""
        engine = self.engine
        state_of = engine.state_of
        for key in engine.workload_keys():  # the engine's own deadlines act on quota holders only
            if key not in self._disturbed and engine.has_deadline(key):
                return True
        for _, _, _, payload in self._queue:  # timers only: the inputs are in ``_inputs``
            key, epoch = payload[0], payload[1]  # type: ignore[index]
            if self._epoch.get(key) != epoch or key in self._disturbed:
                continue
            if state_of(key) in (State.QUOTA_RESERVED, State.ADMITTED):
                return True
        return False

    def _sample(self, now_us: int) -> None:
        engine = self.engine
        fair = engine.config.fair_sharing.enable
        for name in engine.cluster_queue_names():
            usage = engine.usage_of(name)
            pending = engine.pending_count(name)
            share = engine.weighted_share(name) if fair else 0
            state = (usage, pending, share)
            if self._last_sample.get(name) != state:
                self._last_sample[name] = state
                self.run_data.samples.append(UsageSample(now_us, name, usage, pending, share))

    # ----------------------------------------------------------------------------------- handlers

    def _handle(self, kind: int, payload: object, now_us: int) -> None:
        if kind in (_ARRIVAL, _CHANGE):
            self._inputs_left -= 1
            self._progress()
            if kind == _ARRIVAL:
                assert isinstance(payload, SubmittedWorkload)
                self._arrive(payload, now_us)
            else:
                assert isinstance(payload, Change)
                self._apply_change(payload, now_us)
            return
        assert isinstance(payload, tuple)
        key, epoch, *rest = payload
        if self._epoch.get(key) == epoch:  # a timer of an earlier reservation is void
            _WORKLOAD_TIMERS[Timer(kind)](self, key, epoch, rest, now_us)

    def finish_times(self) -> dict[str, int]:
        """When each running workload's job ends (its ``pykueue.dev/runtime`` from its admission), by
        key: the finish timers still pending, for a forecast from this instant (``sim/forecasts.py``)."""
        out: dict[str, int] = {}
        for time_us, _, kind, payload in self._queue:
            if kind == _FINISH:
                key, epoch = payload[0], payload[1]  # type: ignore[index]
                if self._epoch.get(key) == epoch:
                    out[key] = time_us
        return out

    def submitted(self, key: str) -> SubmittedWorkload:
        """The workload as it was submitted, with its simulation annotations."""
        return self._subs[key]

    def submit(self, sub: SubmittedWorkload, now_us: int) -> None:
        """A workload created while the clock runs by a driver (a MultiKueue copy in a worker)."""
        self._subs[sub.workload.key] = sub
        if sub.checks:
            self._scripts[sub.workload.key] = sub.checks
        self._arrive(sub, now_us)

    def _arrive(self, sub: SubmittedWorkload, now_us: int) -> None:
        key = sub.workload.key
        self.engine.add_workload(sub.workload, now_us)
        if self.engine.state_of(key) is State.ADMITTED:
            self._epoch[key] = self._epoch.get(key, 0) + 1
            self._on_admitted(key, now_us, preadmitted=True)

    def _finish(self, key: str, epoch: int, rest: list, now_us: int) -> None:
        if key in self._slices:  # an elastic Job: it ends under whichever slices it has then
            for k in self._slices[key]:
                if self.engine.state_of(k) in (State.ADMITTED, State.PENDING):
                    self.engine.finish_workload(k, now_us)
        elif self.engine.state_of(key) is State.ADMITTED:
            self.engine.finish_workload(key, now_us)

    def _ready(self, key: str, epoch: int, rest: list, now_us: int) -> None:
        self.engine.mark_pods_ready(key, now_us)

    def _check(self, key: str, epoch: int, rest: list, now_us: int) -> None:
        check, state = rest
        self.engine.set_check_state(key, check, state, now_us)

    def _unready(self, key: str, epoch: int, rest: list, now_us: int) -> None:
        self._on_unready(key, epoch, now_us)

    def _on_reserved(self, key: str, now_us: int) -> None:
        """A new quota reservation: timers of earlier ones are void; script this one's checks."""
        epoch = self._epoch.get(key, 0) + 1
        self._epoch[key] = epoch
        script = self._scripts.get(key)
        if script is None:
            return
        checks = self.engine.check_names(key)
        if not checks:
            return
        for check in checks:
            step = step_for(script, check, epoch)
            if step is not None:
                state, delay = step
                self._at(now_us + to_us(delay), _CHECK, (key, epoch, check, state))

    def _on_admitted(self, key: str, now_us: int, *, preadmitted: bool = False) -> None:
        sub = self._subs.get(key)
        if sub is None or elastic.is_replacement(self.engine, key):
            return  # a scale-up slice: the Job runs on, its runtime counted from its first admission
        if self.runs_elsewhere is not None and self.runs_elsewhere(key):
            return  # its pods run in a worker cluster, where its copy has these timers
        epoch = self._epoch.get(key, 0)
        if sub.runtime is not None:
            self._at(now_us + to_us(sub.runtime), _FINISH, (key, epoch))
        # The pods' script: when they are ready. Kueue's own deadlines (the pods-ready timeout, the
        # maximum execution time) are the engine's, which wakes the loop through next_wakeup.
        ready_after = sub.ready_after
        if (self.engine.config.wait_for_pods_ready.enable and not preadmitted and ready_after != NEVER_READY
                and math.isfinite(ready_after)):
            self._at(now_us + to_us(ready_after), _READY, (key, epoch))
        if sub.unready_after is not None:
            self._at(now_us + to_us(sub.unready_after), _UNREADY, (key, epoch))

    def _on_unready(self, key: str, epoch: int, now_us: int) -> None:
        """Pods stopped being ready (``pykueue.dev/unready-after``), ready again after
        ``unready-for``; the engine evicts it if waitForPodsReady.recoveryTimeout passes first."""
        self.engine.mark_pods_not_ready(key, now_us)
        sub = self._subs[key]
        if math.isfinite(sub.unready_for):
            self._at(now_us + to_us(sub.unready_for), _READY, (key, epoch))

    def _apply_change(self, change: Change, now: int) -> None:
        """A timed change of an object (``pykueue.dev/at`` / ``delete-at``), by kind."""
        engine, obj = self.engine, change.obj
        if change.kind in WORKLOAD_LIKE:
            if change.delete:
                engine.delete_workload(change.key)
            elif isinstance(obj, SubmittedWorkload) and engine.state_of(change.key) is not None:
                key = elastic.current(self._slices, change.key)
                if obj.workload.elastic:
                    added = elastic.scale(engine, self._slices, change.key, obj.workload, now)
                    if added is not None:
                        self._subs[added] = self._subs[change.key]
                engine.set_active(key, obj.workload.active, now)
                engine.set_reclaimable_pods(key, obj.workload.reclaimable_pods, now)
            return
        handlers = _CHANGES.get(change.kind)
        if handlers is None:
            return  # PriorityClass / WorkloadPriorityClass: read by the loader when workloads are created
        apply, delete, kind = handlers
        if change.delete:
            delete(engine, change.key)
        else:
            assert isinstance(obj, kind)
            apply(engine, obj, now)


_WORKLOAD_TIMERS: dict[Timer, Callable[[Simulation, str, int, list, int], None]] = {
    Timer.FINISH: Simulation._finish,
    Timer.READY: Simulation._ready,
    Timer.UNREADY: Simulation._unready,
    Timer.CHECK: Simulation._check,
}

# kind -> (apply(engine, obj, now), delete(engine, key), the engine type of its object)
_CHANGES: dict[str, tuple[Callable[[Engine, Any, int], None], Callable[[Engine, str], None], type]] = {
    "ClusterQueue": (Engine.apply_cluster_queue, Engine.delete_cluster_queue, model.ClusterQueue),
    "LocalQueue": (Engine.apply_local_queue, Engine.delete_local_queue, model.LocalQueue),
    "Cohort": (lambda e, o, now: e.apply_cohort(o), Engine.delete_cohort, model.Cohort),
    "ResourceFlavor": (lambda e, o, now: e.apply_resource_flavor(o), Engine.delete_resource_flavor,
                       model.ResourceFlavor),
    "Namespace": (lambda e, o, now: e.apply_namespace(o), Engine.delete_namespace, model.Namespace),
    "AdmissionCheck": (lambda e, o, now: e.apply_admission_check(o), Engine.delete_admission_check,
                       model.AdmissionCheck),
}
