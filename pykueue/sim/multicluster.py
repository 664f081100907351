"""MultiKueue on the virtual clock: a manager cluster and its workers, one engine each, on one clock.

The dispatch follows the live controller (``pykueue/controller/multikueue_workloads.py``) with the
engine's rules (``pykueue.engine.multikueue``), each step at the instant its cause happens (the live
controller's latencies are not modelled):

1. a workload reserves quota in a manager ClusterQueue whose MultiKueue AdmissionCheck applies: the
   dispatcher nominates workers (``AllAtOnce``: every worker of the check's MultiKueueConfig;
   ``Incremental``: up to 3 more, in name order, each round of 5 minutes) and a copy of the Workload,
   created now, is added to each nominated worker;
2. the workers schedule their copies as any workload; the first copy admitted wins (a tie at one
   instant goes to the first worker by name, as ``first_admitted`` breaks it), the other copies are
   removed, and the manager's check turns Ready: the workload is Admitted there, its
   ``clusterName`` the winner;
3. the copy runs in the winner (its ``runtime`` and ``ready-after`` count there) and, when it
   finishes, the manager's workload finishes at the same instant;
4. a winning copy evicted in its worker sets the manager's check to Retry (the manager evicts and
   requeues the workload, which is dispatched again when it reserves quota again); a workload evicted,
   deactivated or finished in the manager has its copies removed.

An external dispatcher (any other ``dispatcherName``) nominates nobody here: its workloads wait on
the manager holding quota. Workers are never lost (every declared worker is usable).
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass, field

from pykueue.api.clusters import ClusterInputs
from pykueue.api.inputs import SubmittedWorkload
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine import multikueue as mk
from pykueue.engine.events import EngineError, Event
from pykueue.engine.model import US, format_us, seconds_to_us
from pykueue.engine.workload import State
from pykueue.sim.simulator import Run, Simulation, StepBudgetExceeded

MAX_PASSES_PER_INSTANT = 10_000  # manager-worker exchanges at one instant before the run is stopped


@dataclass(slots=True)
class Dispatch:
    """One workload's dispatch while it holds quota in the manager."""

    check: str
    nominated: list[str] = field(default_factory=list)
    copies: set[str] = field(default_factory=set)  # workers holding a copy now
    winner: str | None = None
    epoch: int = 0  # the manager's quota reservation this dispatch belongs to


@dataclass(slots=True, frozen=True)
class Win:
    """A worker admitted a workload's copy: where and when it ran (the manager's Admitted instant)."""

    time_us: int
    workload: str
    cluster: str


@dataclass
class MultiRun:
    manager: Run
    workers: dict[str, Run]
    wins: list[Win]
    end_us: int
    cluster_name: dict[str, str | None]  # workload -> the worker it last ran on (None: never dispatched there)


class MultiSimulation:
    def __init__(self, inputs: ClusterInputs, *, until: float | None = None, step_budget: int | None = None) -> None:
        self.federation = inputs.federation
        self.manager = Simulation(inputs.manager, until=until)
        self.workers = {name: Simulation(w, until=until) for name, w in inputs.workers.items()}
        self.until_us = self.manager.until_us
        self.step_budget = step_budget
        self.steps = 0
        self.dispatcher = inputs.manager.config.multi_kueue.dispatcher_name
        self.dispatches: dict[str, Dispatch] = {}
        self.reservations: dict[str, int] = {}  # manager quota reservations so far, per workload
        self.wins: list[Win] = []
        self.cluster_name: dict[str, str | None] = {}
        self._rounds: list[tuple[int, int, str, int]] = []  # (time, seq, workload, reservation)
        self._seq = 0
        self._pending: list[tuple[str | None, Event]] = []  # (worker or None for the manager, event)
        self.manager.observer = lambda now, events: self._pending.extend((None, e) for e in events)
        self.manager.runs_elsewhere = lambda key: key in self.dispatches
        for name, sim in self.workers.items():
            sim.observer = lambda now, events, name=name: self._pending.extend((name, e) for e in events)

    # ------------------------------------------------------------------------------------- clock

    def _all(self) -> list[Simulation]:
        return [self.manager, *(self.workers[n] for n in sorted(self.workers))]

    def next_time(self) -> int | None:
        times = [t for t in (s.next_time() for s in self._all()) if t is not None]
        if self._rounds:
            times.append(self._rounds[0][0])
        return min(times) if times else None

    def run(self) -> MultiRun:
        for sim in self._all():
            sim.start()
        last_us = 0
        while True:
            now = self.next_time()
            if now is None or (self.until_us is not None and now > self.until_us):
                break
            self.steps += 1
            if self.step_budget is not None and self.steps > self.step_budget:
                raise StepBudgetExceeded(f"more than {self.step_budget} steps (at {format_us(now)})")
            try:
                self._instant(now)
            except EngineError:
                for sim in self._all():
                    sim.stopped(now)
                raise
            last_us = now
        for sim in self._all():
            sim.finish(last_us)
        return self.result()

    def result(self) -> MultiRun:
        runs = [s.run_data for s in self._all()]
        end = self.until_us if self.until_us is not None else max((r.end_us for r in runs), default=0)
        for run in runs:  # stopped or finished, every cluster's run ends where the whole run does
            run.end_us = end
        return MultiRun(self.manager.run_data, {n: s.run_data for n, s in self.workers.items()}, self.wins, end,
                        self.cluster_name)

    def _instant(self, now: int) -> None:
        for sim in self._all():
            sim.take_instant(now)
        while self._rounds and self._rounds[0][0] == now:
            _, _, key, epoch = heapq.heappop(self._rounds)
            self._next_round(key, epoch, now)
        for _ in range(MAX_PASSES_PER_INSTANT):
            self._react(now)
            changed = False
            for sim in self._all():
                changed = sim.schedule(now) or changed
            if not changed and not self._pending:
                break
        else:
            raise EngineError(f"MultiKueue dispatch did not settle at {format_us(now)} after "
                              f"{MAX_PASSES_PER_INSTANT} exchanges between the manager and its workers")
        for sim in self._all():
            sim.after_instant(now)

    # --------------------------------------------------------------------------------- reactions

    def _react(self, now: int) -> None:
        """Act on the events recorded since the last pass, in the order they were recorded; what this
        does makes new events, acted on in the next pass."""
        gone = [key for key in self.dispatches if not self.manager.engine.has_workload(key)]
        for key in gone:  # deleted in the manager (no event says so): its copies go too
            self._withdraw(key)
            del self.dispatches[key]
        while self._pending:
            pending, self._pending = self._pending, []
            admitted: dict[str, dict[str, str]] = {}  # workload -> worker -> when (one instant: a tie)
            for cluster, e in pending:
                if cluster is None:
                    self._on_manager(e, now)
                elif e.type == ev.ADMITTED:
                    admitted.setdefault(e.workload, {})[cluster] = format_us(now)
                else:
                    self._on_worker(cluster, e, now)
            for key, at in admitted.items():
                self._on_copy_admitted(key, at, now)

    def _check_of(self, key: str) -> str | None:
        """The MultiKueue check of the workload's current reservation (at most one applies, as upstream
        assumes)."""
        return next((c for c in self.manager.engine.check_names(key) if c in self.federation.checks), None)

    def _on_manager(self, e: Event, now: int) -> None:
        key = e.workload
        if e.type == ev.QUOTA_RESERVED:
            self.reservations[key] = self.reservations.get(key, 0) + 1
            check = self._check_of(key)
            if check is None:
                return
            self._withdraw(key)
            self.dispatches[key] = d = Dispatch(check, epoch=self.reservations[key])
            self.cluster_name[key] = None
            if self.dispatcher == model.MULTIKUEUE_ALL_AT_ONCE:
                self._nominate(key, d, mk.all_at_once(self.federation.checks[check]), now)
            elif self.dispatcher == model.MULTIKUEUE_INCREMENTAL:
                self._next_round(key, d.epoch, now)
        elif e.type in (ev.EVICTED, ev.FINISHED) and key in self.dispatches:
            if e.type == ev.FINISHED and self.dispatches[key].winner is not None:
                self._withdraw(key, keep=self.dispatches[key].winner)  # its copy stays where it ran
            else:
                self._withdraw(key)
            del self.dispatches[key]

    def _next_round(self, key: str, epoch: int, now: int) -> None:
        """The incremental dispatcher: the round is over (a timer set for its end), or this is the first."""
        d = self.dispatches.get(key)
        if d is None or d.epoch != epoch or d.winner is not None:
            return
        clusters = self.federation.checks[d.check]
        new, wait = mk.incremental_round(d.nominated, clusters, None, now / US)
        if new is None:
            return
        self._nominate(key, d, new, now)
        if wait is not None and len(new) < len(set(clusters)):
            self._seq += 1
            heapq.heappush(self._rounds, (now + seconds_to_us(wait), self._seq, key, epoch))

    def _nominate(self, key: str, d: Dispatch, nominated: list[str], now: int) -> None:
        """Copies in the nominated workers that have none yet (a worker holding another workload of that
        name refuses the copy, as an API server answers AlreadyExists)."""
        d.nominated = list(nominated)
        sub = self.manager.submitted(key)
        for cluster in nominated:
            worker = self.workers[cluster]
            if cluster in d.copies or worker.engine.has_workload(key):
                continue
            copy = dataclasses.replace(sub.workload, creation_time=now / US, admission=None, admitted=True,
                                       check_states={}, admitted_time=None, evicted=None,
                                       accumulated_execution_seconds=0)
            worker.submit(SubmittedWorkload(copy, sub.source, now / US, sub.runtime, sub.ready_after,
                                            sub.unready_after, sub.unready_for, None, sub.annotations,
                                            sub.labels), now)
            d.copies.add(cluster)

    def _withdraw(self, key: str, keep: str | None = None) -> None:
        """The copies removed from every worker (but ``keep``)."""
        d = self.dispatches.get(key)
        if d is None:
            return
        for cluster in sorted(d.copies):
            if cluster != keep:
                self.workers[cluster].engine.delete_workload(key)
        d.copies = {keep} if keep in d.copies else set()

    def _on_copy_admitted(self, key: str, admitted_at: dict[str, str], now: int) -> None:
        d = self.dispatches.get(key)
        if d is None or d.winner is not None:
            return
        winner = mk.first_admitted({c: at for c, at in admitted_at.items() if c in d.copies})
        if winner is None:
            return
        d.winner = winner
        self._withdraw(key, keep=winner)
        self.cluster_name[key] = winner
        self.wins.append(Win(now, key, winner))
        self.manager.engine.set_check_state(key, d.check, model.CheckState.READY, now)

    def _on_worker(self, cluster: str, e: Event, now: int) -> None:
        d = self.dispatches.get(e.workload)
        if d is None or d.winner != cluster:
            return
        if e.type == ev.FINISHED:
            if self.manager.engine.state_of(e.workload) is State.ADMITTED:
                self.manager.engine.finish_workload(e.workload, now)
        elif e.type == ev.EVICTED:
            self.manager.engine.set_check_state(e.workload, d.check, model.CheckState.RETRY, now)
