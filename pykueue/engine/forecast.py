"""When each pending workload will be admitted: the engine played forward on a copy of itself.

The question users of a shared cluster ask most is "when will my job run?". The engine already decides
admission, preemption and fair sharing exactly as Kueue does, so the forecast asks it: it copies the
engine (the live one never changes), ends each workload holding quota at its expected end
(``expected_runtimes.py``: the figure and where it came from), and schedules at each such instant and
at every instant the engine's own timers name, until every workload pending at ``now`` is admitted or
the horizon passes. Each workload's first admission in that replay is its prediction, with the flavors
it got, the workloads whose end let it in (``waits_for``), those it preempted, and the sources of every
figure it rests on, through the workloads it waited for in turn; it is a ``guess`` when any of them is
``learned`` or ``unknown``.

What the replay cannot know, it assumes, and says here: no workload arrives after ``now`` (nothing is
known of them; one that arrives and overtakes moves the real admission later), no object changes, jobs
stop at once when evicted or preempted (their quota is given back at the decision), pods are ready as
soon as they are admitted, and admission checks answer Ready at once. A workload that preempts in the
replay is predicted at its preemption, as the engine decides it there.

The copy is ``copy.deepcopy`` of the engine with its immutable specs shared, not copied (see
``copy_engine``); the controller's rebuild from its caches goes through the API layer, which the engine
does not import, and would cost more. Upstream Kueue has no counterpart: its visibility API gives a
position in the queue and no time (kueue#1657); Slurm's ``squeue --start`` estimates from its backfill
plan only.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from pykueue.engine import events as ev
from pykueue.engine import model, status
from pykueue.engine.engine import Engine
from pykueue.engine.expected_runtimes import GUESSES, UNKNOWN, Expected, RuntimeSource
from pykueue.engine.workload import State

DEFAULT_HORIZON_US = 7 * 24 * 3600 * 1_000_000  # a week of the driver's clock
MAX_INSTANTS = 100_000  # instants one forecast plays at most: its work is bounded whatever the input


@dataclass(frozen=True, slots=True)
class Dependency:
    """A workload whose end (in the replay) let the predicted one in, and the figure for that end."""

    key: str
    end_us: int | None
    source: RuntimeSource


@dataclass(frozen=True, slots=True)
class Prediction:
    """One pending workload's forecast. ``admission_us`` None: not admitted within the horizon; then
    ``waits_for`` names the workloads still holding quota at the horizon with no known end, and
    ``reason``/``message`` are its QuotaReserved=False condition at the end of the replay (the words
    ``explain`` prints: one that can never fit says why)."""

    key: str
    admission_us: int | None
    flavors: Mapping[str, str]
    cluster_queue: str | None
    waits_for: tuple[Dependency, ...]
    preempts: tuple[str, ...]
    sources: frozenset[RuntimeSource]
    guess: bool
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Forecast:
    now_us: int
    horizon_us: int  # the last instant played (now + the horizon asked for)
    predictions: Mapping[str, Prediction]
    instants: int  # instants the replay played
    truncated: bool = False  # stopped at MAX_INSTANTS before the horizon
    ends: Mapping[str, Dependency] = field(default_factory=dict)  # every end the replay played, by key


def _share_immutables() -> None:
    """The engine's frozen dataclasses (specs, admissions, events, snapshots) never change once made: a
    copy shares them (registered as atomic with ``copy``, once)."""
    for module in (model, ev, status):
        for value in vars(module).values():
            if (isinstance(value, type) and dataclasses.is_dataclass(value)
                    and value.__dataclass_params__.frozen):  # type: ignore[attr-defined]
                copy._deepcopy_dispatch[value] = copy._deepcopy_atomic  # type: ignore[attr-defined]


_share_immutables()


class ForecastUnavailable(Exception):
    """The engine cannot be copied: a compiled build (``pykueue.compiled``), whose mypyc classes
    ``deepcopy`` cannot rebuild (their ``__new__`` wants ``__init__``'s arguments)."""


def copy_engine(engine: Engine) -> Engine:
    """A deep copy that shares what never changes (the workloads' submitted specs and the queue
    objects' specs), so copying a few hundred workloads costs little more than their mutable state.
    ``ForecastUnavailable`` with the compiled engine."""
    memo: dict[int, object] = {}
    for info in engine.workloads.values():
        memo[id(info.spec)] = info.spec
        if info.admission is not None:
            memo[id(info.admission)] = info.admission
    for cq in engine.cqs.values():
        memo[id(cq.spec)] = cq.spec
    memo[id(engine.config)] = engine.config
    try:
        return copy.deepcopy(engine, memo)
    except (TypeError, dataclasses.FrozenInstanceError) as e:
        raise ForecastUnavailable("a forecast needs the pure-Python engine: the compiled build cannot be "
                                  "copied yet (python -m pykueue.compiled clean)") from e


def forecast(engine: Engine, now_us: int, ends: Mapping[str, Expected],
             horizon_us: int = DEFAULT_HORIZON_US) -> Forecast:
    """Play ``engine`` forward from ``now_us`` on a copy for at most ``horizon_us`` and predict each
    pending workload's admission. ``ends`` has, by key, an ``Expected`` for each workload holding quota
    (its ``end_us``) and for each pending one (its ``runtime_us``, counted from its admission in the
    replay); a workload missing from it never ends (source ``unknown``). Workloads arriving after
    ``now_us`` are not known and so not in the forecast (see the module's docstring)."""
    replay = copy_engine(engine)
    replay.jobs_stop_at_once = True
    replay.reason_watch = None
    return _Replay(replay, now_us, ends, now_us + horizon_us).run()


class _Replay:
    def __init__(self, engine: Engine, now_us: int, ends: Mapping[str, Expected], last_us: int) -> None:
        self.engine, self.now_us, self.ends, self.last_us = engine, now_us, ends, last_us
        self.pending = set(engine.workload_keys(State.PENDING))
        self.predictions: dict[str, Prediction] = {}
        self.heap: list[tuple[int, int, str, int]] = []  # (end, seq, key, reservation number)
        self.reservations: dict[str, int] = {}  # reservations made in the replay, per key: a stale end is skipped
        self.ended: dict[str, Dependency] = {}  # the ends the replay played, by key
        self.held: set[str] = set()  # every workload that held quota at some point of the replay
        self.seq = 0

    def _push(self, key: str, end_us: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (end_us, self.seq, key, self.reservations.get(key, 0)))

    def _expected(self, key: str) -> Expected:
        return self.ends.get(key, UNKNOWN)

    def _live(self, entry: tuple[int, int, str, int]) -> bool:
        key = entry[2]
        return self.reservations.get(key, 0) == entry[3] and self.engine.workloads[key].state is State.ADMITTED

    def run(self) -> Forecast:
        engine = self.engine
        for key in sorted(engine.stopping):
            engine.job_stopped(key, self.now_us)
        for key in engine.workload_keys():
            info = engine.workloads[key]
            if not info.has_quota:
                continue
            self.held.add(key)
            if info.state is State.ADMITTED:
                self._push_end(key, info.admitted_us if info.admitted_us is not None else self.now_us)
        self._instant(self.now_us, [], [k for k in sorted(self.held)])
        instants, truncated = 1, False
        while len(self.predictions) < len(self.pending):
            t = self._next()
            if t is None or t > self.last_us:
                break
            if instants >= MAX_INSTANTS:
                truncated = True
                break
            instants += 1
            ended: list[str] = []
            while self.heap and self.heap[0][0] == t:
                entry = heapq.heappop(self.heap)
                if self._live(entry):
                    engine.finish_workload(entry[2], t)
                    ended.append(entry[2])
            self._instant(t, ended, [])
        return self._result(instants, truncated)

    def _push_end(self, key: str, admitted_us: int) -> None:
        """The end of a workload admitted at ``admitted_us``: the one ``ends`` gives for the reservation
        it held at ``now``; after a new reservation in the replay, its run time from then."""
        expected = self._expected(key)
        if expected.end_us is not None and self.reservations.get(key, 0) == 0:
            self._push(key, max(expected.end_us, self.now_us))
            return
        runtime = expected.runtime_us
        if runtime is None and expected.end_us is not None:
            runtime = max(0, expected.end_us - self.now_us)  # it held quota at now, lost it, and is back
        if runtime is not None:
            self._push(key, admitted_us + runtime)

    def _next(self) -> int | None:
        heap = self.heap
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)
        wake = self.engine.next_wakeup()
        top = heap[0][0] if heap else None
        if wake is None or top is None:
            return top if wake is None else wake
        return min(top, wake)

    def _assume(self, keys: list[str], t: int) -> None:
        """The replay's assumptions for workloads holding quota: checks Ready, pods ready."""
        engine = self.engine
        for key in keys:
            info = engine.workloads[key]
            for check in sorted(info.check_states):
                if info.has_quota and info.check_states.get(check) != "Ready":
                    engine.set_check_state(key, check, "Ready", t)
            if engine.config.wait_for_pods_ready.enable and info.state is State.ADMITTED and not info.pods_ready:
                engine.mark_pods_ready(key, t)

    def _instant(self, t: int, ended: list[str], holding: list[str]) -> None:
        engine = self.engine
        released = [self._dependency(k, t) for k in ended]
        self._assume(holding, t)
        events = engine.take_events() + engine.schedule(t)
        batch = events
        for _ in range(100):  # what is assumed of new reservations may let more in at this instant
            reserved = [e.workload for e in batch if e.type == ev.QUOTA_RESERVED]
            if not reserved:
                break
            self._assume(reserved, t)
            batch = engine.take_events() + engine.schedule(t)
            events += batch
        victims: dict[str, list[str]] = {}
        for e in events:
            if e.type == ev.PREEMPTED and e.by is not None:
                victims.setdefault(e.by, []).append(e.workload)
            elif ((e.type == ev.DEACTIVATED or (e.type == ev.EVICTED and e.reason != ev.EVICTED_PREEMPTED))
                  and e.workload in self.held and e.workload not in ended):
                released.append(self._dependency(e.workload, t))
        for e in events:
            key = e.workload
            if e.type == ev.QUOTA_RESERVED:
                self.reservations[key] = self.reservations.get(key, 0) + 1
                self.held.add(key)
            elif e.type == ev.ADMITTED:
                self._push_end(key, t)
                if key in self.pending and key not in self.predictions:
                    self._predict(key, t, e, released, victims.get(key, []))

    def _dependency(self, key: str, t: int) -> Dependency:
        dep = Dependency(key, t, self._expected(key).source)
        self.ended[key] = dep
        return dep

    def _sources(self, deps: tuple[Dependency, ...]) -> frozenset[RuntimeSource]:
        out: set[RuntimeSource] = set()
        for d in deps:
            out.add(d.source)
            earlier = self.predictions.get(d.key)
            if earlier is not None:
                out |= earlier.sources
        return frozenset(out)

    def _predict(self, key: str, t: int, e: ev.Event, released: list[Dependency], victims: list[str]) -> None:
        flavors: dict[str, str] = {}
        if e.admission is not None:
            for psa in e.admission.pod_set_assignments:
                flavors.update(psa.flavors)
        waits = tuple(released)
        sources = self._sources(waits)
        self.predictions[key] = Prediction(
            key, t, dict(sorted(flavors.items())), e.cluster_queue, waits, tuple(victims), sources,
            bool(sources & GUESSES))

    def _root(self, cq_name: str | None) -> str | None:
        cq = self.engine.cqs.get(cq_name or "")
        if cq is None:
            return cq_name
        node = cq.node
        while node.parent is not None:
            node = node.parent
        return node.name

    def _result(self, instants: int, truncated: bool) -> Forecast:
        engine = self.engine
        ends = {entry[2]: entry[0] for entry in self.heap if self._live(entry)}
        still = [(k, engine.workloads[k]) for k in sorted(self.held)
                 if k in engine.workloads and engine.workloads[k].has_quota]
        for key in sorted(self.pending - set(self.predictions)):
            status = engine.workload_status(key)
            assert status is not None
            root = self._root(status.cluster_queue)
            waits = tuple(Dependency(k, ends.get(k), self._expected(k).source) for k, info in still
                          if k != key and self._root(info.cluster_queue) == root)
            sources = self._sources(waits)
            self.predictions[key] = Prediction(
                key, None, {}, status.cluster_queue, waits, (), sources, bool(sources & GUESSES) or truncated,
                status.reason, status.message)
        return Forecast(self.now_us, self.last_us, dict(sorted(self.predictions.items())), instants, truncated,
                        dict(self.ended))
