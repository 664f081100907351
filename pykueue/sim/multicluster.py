"""MultiKueue on the virtual clock: a manager cluster and its workers, one engine each, on one clock.

The dispatch follows the live controller (``pykueue/controller/multikueue/workloads.py``) with the
engine's rules (``pykueue.engine.multikueue``), each step at the instant its cause happens (the live
controller's latencies are not modelled):

1. a workload reserves quota in a manager ClusterQueue whose MultiKueue AdmissionCheck applies: a job
   whose ``spec.managedBy`` names another controller has the check Rejected (deactivated); otherwise the
   dispatcher nominates workers (``AllAtOnce``: every reachable worker of the check's MultiKueueConfig;
   ``Incremental``: up to 3 more, in name order, each round of 5 minutes; any other name: the job's
   ``pykueue.dev/nominate`` script, as an external dispatcher would write it) and a copy of the
   Workload, created now, is added to each nominated worker that is reachable;
2. the workers schedule their copies as any workload (with the job's ``admission-checks`` script for
   the checks of the worker's ClusterQueue); the first copy admitted wins (a tie at one instant goes to
   the first worker by name, as ``first_admitted`` breaks it), the other copies are removed, and the
   manager's check turns Ready: the workload is Admitted there, its ``clusterName`` the winner;
3. the copy runs in the winner (its ``runtime`` and ``ready-after`` count there) and, when it
   finishes, the manager's workload finishes at the same instant;
4. a winning copy evicted in its worker sets the manager's check to Retry (the manager evicts and
   requeues the workload, which is dispatched again when it reserves quota again); a workload evicted,
   deactivated or finished in the manager has its copies removed;
5. a worker the manager cannot reach (``pykueue.dev/unreachable`` windows, or its MultiKueueCluster
   deleted) is seen by nobody: its copies run on but nothing of it reaches the manager and no copy is
   made or removed there. A workload admitted through it is given up ``workerLostTimeout`` after the
   worker was lost (``lost_worker``: check Retry); when the worker is back, the manager looks at every
   copy it holds as the controller's reconcile does (``_resync``): a copy there admitted before the
   current winner's wins back (the winner's copy is removed and the job runs on in the returned
   worker), but the manager's ``clusterName`` keeps naming the other worker and no new Admitted event
   is recorded (``reserving``: the field is immutable once set).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field

from pykueue.api.clusters import ClusterInputs
from pykueue.api.inputs import SubmittedWorkload
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine import multikueue as mk
from pykueue.engine.events import EngineError, Event
from pykueue.engine.model import US, format_us, seconds_to_us
from pykueue.engine.workload import State
from pykueue.jobs import registry
from pykueue.sim.simulator import Run, Simulation, StepBudgetExceeded

MAX_PASSES_PER_INSTANT = 10_000  # manager-worker exchanges at one instant before the run is stopped


def unmanaged(managed_by: str | None, kind: str = "Job") -> str | None:
    """Why the controller rejects the job's check (upstream's IsJobManagedByKueue), None when it may be
    dispatched: a ``managedBy`` left unset or naming the kind's own controller is defaulted to
    MultiKueue's by the webhook (the job's queue has a MultiKueue check), any other value stays. A
    Workload given as such has no owner, so no adapter: rejected."""
    if kind == "Workload":
        return mk.NO_ADAPTER
    integration = registry.BY_KIND.get(kind)
    if integration is None or integration.own_controller is None or managed_by in (None, integration.own_controller):
        return None  # no managedBy rule, or defaulted to MultiKueue's by the kind's webhook
    why = mk.managed_by_reason(managed_by or "", integration.managed_by_field)
    return None if why is None else mk.UNMANAGED + why


def _stamp(us: int) -> str:
    """An instant as ``first_admitted`` compares them (text, in time order)."""
    return f"{us:020d}"


@dataclass(slots=True)
class Dispatch:
    """One workload's dispatch while it holds quota in the manager."""

    check: str
    nominated: list[str] = field(default_factory=list)
    winner: str | None = None
    epoch: int = 0  # the manager's quota reservation this dispatch belongs to
    lost_since: float | None = None  # the worker-lost instant the controller keeps on the Workload


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
    cluster_name: dict[str, str | None]  # workload -> its status.clusterName (None: not admitted through a worker)
    check_messages: dict[str, str] = field(default_factory=dict)  # workload -> a Rejected check's message
    outages: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)  # worker -> unreachable spans
    ran_in: dict[str, str] = field(default_factory=dict)  # workload -> the worker whose copy its job last ran from

    def unreachable_since(self, worker: str, at_us: int) -> int | None:
        """Since when the manager cannot reach the worker at ``at_us`` (None: it can)."""
        return next((start for start, end in self.outages.get(worker, ())
                     if start <= at_us and (end is None or at_us < end)), None)


_ROUND, _LOST, _NOMINATE, _OUTAGE, _CONFIG = 0, 1, 2, 3, 4  # timer kinds


class MultiSimulation:
    def __init__(self, inputs: ClusterInputs, *, until: float | None = None, step_budget: int | None = None) -> None:
        self.federation = inputs.federation
        self.checks = {check: list(clusters) for check, clusters in inputs.federation.checks.items()}  # as of now
        self.manager = Simulation(inputs.manager, until=until)
        self.workers = {name: Simulation(w, until=until) for name, w in inputs.workers.items()}
        self.until_us = self.manager.until_us
        self.step_budget = step_budget
        self.steps = 0
        self.dispatcher = inputs.manager.config.multi_kueue.dispatcher_name
        self.lost_timeout = inputs.manager.config.multi_kueue.worker_lost_timeout_seconds
        self.dispatches: dict[str, Dispatch] = {}
        self.copies: dict[str, set[str]] = {}  # workload -> the workers holding a copy of it (stale ones too)
        self.admitted_at: dict[tuple[str, str], int] = {}  # (worker, workload) -> its copy's last admission
        self.reservations: dict[str, int] = {}  # manager quota reservations so far, per workload
        self.wins: list[Win] = []
        self.cluster_name: dict[str, str | None] = {}
        self.ran_in: dict[str, str] = {}
        self.check_messages: dict[str, str] = {}
        self.outages = {w: [(seconds_to_us(a), seconds_to_us(b) if math.isfinite(b) else None) for a, b in spans]
                        for w, spans in self.federation.unreachable.items()}
        self._timers: list[tuple[int, int, int, tuple]] = []  # (time, seq, kind, payload)
        self._seq = 0
        for worker, spans in self.outages.items():
            for start, end in spans:
                self._timer(start, _OUTAGE, (worker, False))
                if end is not None:
                    self._timer(end, _OUTAGE, (worker, True))
        for at, check, clusters in self.federation.changes:
            self._timer(seconds_to_us(at), _CONFIG, (check, clusters))
        self._pending: list[tuple[str | None, Event]] = []  # (worker or None for the manager, event)
        self.manager.observer = lambda now, events: self._pending.extend((None, e) for e in events)
        self.manager.runs_elsewhere = lambda key: key in self.dispatches
        for name, sim in self.workers.items():
            sim.observer = lambda now, events, name=name: self._pending.extend((name, e) for e in events)

    # ------------------------------------------------------------------------------------- clock

    def _all(self) -> list[Simulation]:
        return [self.manager, *(self.workers[n] for n in sorted(self.workers))]

    def _timer(self, at: int, kind: int, payload: tuple) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (at, self._seq, kind, payload))

    def reachable(self, worker: str, now: int) -> bool:
        """Whether the manager can reach the worker at ``now`` (a window's end is reachable again)."""
        return not any(start <= now and (end is None or now < end) for start, end in self.outages.get(worker, ()))

    def next_time(self) -> int | None:
        times = [t for t in (s.next_time() for s in self._all()) if t is not None]
        if self._timers:
            times.append(self._timers[0][0])
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
                        self.cluster_name, self.check_messages, self.outages, self.ran_in)

    def _instant(self, now: int) -> None:
        for sim in self._all():
            sim.take_instant(now)
        while self._timers and self._timers[0][0] == now:
            _, _, kind, payload = heapq.heappop(self._timers)
            self._on_timer(kind, payload, now)
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

    def _on_timer(self, kind: int, payload: tuple, now: int) -> None:
        if kind == _CONFIG:
            check, clusters = payload
            self._config_changed(check, clusters, now)
            return
        if kind == _OUTAGE:
            worker, back = payload
            if back:
                self._worker_back(worker, now)
            else:
                self._worker_lost(worker, now)
            return
        key, epoch, *rest = payload
        d = self.dispatches.get(key)
        if d is None or d.epoch != epoch:
            return  # a timer of an earlier reservation
        if kind == _ROUND:
            self._next_round(key, d, now)
        elif kind == _NOMINATE:
            if d.winner is None:
                self._nominate(key, d, list(rest[0]), now, exact=True)
        elif kind == _LOST and d.winner == rest[0] and d.lost_since == rest[1] and not self.reachable(rest[0], now):
            self.manager.engine.set_check_state(key, d.check, model.CheckState.RETRY, now)  # "Reserving remote lost"

    # --------------------------------------------------------------------------------- reactions

    def _react(self, now: int) -> None:
        """Act on the events recorded since the last pass, in the order they were recorded; what this
        does makes new events, acted on in the next pass."""
        gone = [key for key in self.dispatches if not self.manager.engine.has_workload(key)]
        for key in gone:  # deleted in the manager (no event says so): its copies go too
            self._withdraw(key, now)
            del self.dispatches[key]
        while self._pending:
            pending, self._pending = self._pending, []
            admitted: dict[str, dict[str, str | None]] = {}  # workload -> worker -> when (one instant: a tie)
            for cluster, e in pending:
                if cluster is None:
                    self._on_manager(e, now)
                    continue
                if e.type == ev.ADMITTED:
                    self.admitted_at[(cluster, e.workload)] = now
                if not self.reachable(cluster, now):
                    continue  # the manager does not see it; looked at again when the worker is back
                if e.type == ev.ADMITTED:
                    admitted.setdefault(e.workload, {})[cluster] = _stamp(now)
                else:
                    self._on_worker(cluster, e, now)
            for key, at in admitted.items():
                self._on_copy_admitted(key, at, now)

    def _check_of(self, key: str) -> str | None:
        """The MultiKueue check of the workload's current reservation (at most one applies, as upstream
        assumes)."""
        return next((c for c in self.manager.engine.check_names(key) if c in self.checks), None)

    def _usable(self, check: str, now: int) -> list[str]:
        return [c for c in self.checks[check] if self.reachable(c, now)]

    def _config_changed(self, check: str, clusters: list[str], now: int) -> None:
        """The check's MultiKueueConfig lists other workers from now on: a workload admitted through a
        worker no longer listed is given up at once (its copy there removed when the worker can be
        reached), as the controller does, not after ``workerLostTimeout``."""
        self.checks[check] = list(clusters)
        for key, d in list(self.dispatches.items()):
            if d.check == check and d.winner is not None and d.winner not in clusters:
                if self.reachable(d.winner, now):
                    self._remove(d.winner, key)
                self.manager.engine.set_check_state(key, check, model.CheckState.RETRY, now)

    def _on_manager(self, e: Event, now: int) -> None:
        key = e.workload
        if e.type == ev.QUOTA_RESERVED:
            self.reservations[key] = self.reservations.get(key, 0) + 1
            check = self._check_of(key)
            if check is None:
                return
            sub = self.manager.submitted(key)
            why = unmanaged(sub.managed_by, sub.workload.kind)
            if why is not None:
                self.check_messages[key] = why
                self.manager.engine.set_check_state(key, check, model.CheckState.REJECTED, now)
                return
            self._withdraw(key, now)
            self.dispatches[key] = d = Dispatch(check, epoch=self.reservations[key])
            self.cluster_name[key] = None
            if self.dispatcher == model.MULTIKUEUE_ALL_AT_ONCE:
                self._nominate(key, d, mk.all_at_once(self._usable(check, now)), now)
            elif self.dispatcher == model.MULTIKUEUE_INCREMENTAL:
                self._next_round(key, d, now)
            else:  # an external dispatcher: the job's script says what it writes, and when
                for workers, delay in sub.nominate:
                    if delay == 0:
                        self._nominate(key, d, list(workers), now, exact=True)
                    else:
                        self._timer(now + seconds_to_us(delay), _NOMINATE, (key, d.epoch, workers))
        elif e.type in (ev.EVICTED, ev.FINISHED) and key in self.dispatches:
            winner = self.dispatches[key].winner
            if e.type == ev.FINISHED and winner is not None and self.workers[winner].engine.state_of(key) is State.FINISHED:
                self._withdraw(key, now, keep=winner)  # its copy stays where it ran
            else:
                self._withdraw(key, now)  # (finished by a copy elsewhere: the winner's goes too)
            del self.dispatches[key]

    def _next_round(self, key: str, d: Dispatch, now: int) -> None:
        """The incremental dispatcher: the round is over (a timer set for its end), or this is the first."""
        if d.winner is not None:
            return
        clusters = self.checks[d.check]
        new, wait = mk.incremental_round(d.nominated, clusters, None, now / US)
        if new is None:
            return
        self._nominate(key, d, new, now)
        if wait is not None and len(new) < len(set(clusters)):
            self._timer(now + seconds_to_us(wait), _ROUND, (key, d.epoch))

    def _nominate(self, key: str, d: Dispatch, nominated: list[str], now: int, exact: bool = False) -> None:
        """Copies in the nominated reachable workers of the check that have none yet (a worker holding
        another workload of that name refuses the copy, as an API server answers AlreadyExists);
        ``exact`` (an external dispatcher's list): a reachable worker's copy not nominated goes."""
        d.nominated = list(nominated)
        sub = self.manager.submitted(key)
        held = self.copies.setdefault(key, set())
        for cluster in self._usable(d.check, now):
            worker = self.workers[cluster]
            if cluster not in nominated:
                if exact and cluster in held:
                    self._remove(cluster, key)
                continue
            if cluster in held or worker.engine.has_workload(key):
                continue
            copy = dataclasses.replace(sub.workload, creation_time=now / US, admission=None, admitted=True,
                                       check_states={}, admitted_time=None, evicted=None,
                                       accumulated_execution_seconds=0)
            worker.submit(SubmittedWorkload(copy, sub.source, now / US, sub.runtime, sub.ready_after,
                                            sub.unready_after, sub.unready_for, sub.checks, sub.annotations,
                                            sub.labels), now)
            held.add(cluster)

    def _remove(self, cluster: str, key: str) -> None:
        self.workers[cluster].engine.delete_workload(key)
        self.copies.get(key, set()).discard(cluster)

    def _withdraw(self, key: str, now: int, keep: str | None = None) -> None:
        """The copies removed from every reachable worker (but ``keep``): an unreachable worker's copy
        stays there, unseen, until the worker is back."""
        for cluster in sorted(self.copies.get(key, ())):
            if cluster != keep and self.reachable(cluster, now):
                self._remove(cluster, key)

    def _win(self, key: str, d: Dispatch, winner: str, now: int) -> None:
        """``winner``'s copy is the reserving one: the others go and its job runs; the check turns Ready
        with ``clusterName`` the winner, unless the Workload already names another worker (``reserving``
        refuses the change: the controller's reconcile fails, the check and ``clusterName`` stay)."""
        d.winner = winner
        d.lost_since = None
        self._withdraw(key, now, keep=winner)
        self.ran_in[key] = winner
        if mk.reserving(self._check_state(key, d.check), self.cluster_name.get(key), winner).write:
            self.cluster_name[key] = winner
            self.wins.append(Win(now, key, winner))
            self.manager.engine.set_check_state(key, d.check, model.CheckState.READY, now)

    def _check_state(self, key: str, check: str) -> str | None:
        return self.manager.engine.check_state(key, check)

    def _on_copy_admitted(self, key: str, admitted_at: dict[str, str | None], now: int) -> None:
        d = self.dispatches.get(key)
        if d is None or d.winner is not None:
            return
        held = self.copies.get(key, set())
        listed = self.checks[d.check]
        winner = mk.first_admitted({c: at for c, at in admitted_at.items() if c in held and c in listed})
        if winner is not None:
            self._win(key, d, winner, now)

    def _on_worker(self, cluster: str, e: Event, now: int) -> None:
        d = self.dispatches.get(e.workload)
        if d is None or d.winner != cluster:
            return
        if e.type == ev.FINISHED:
            if self.manager.engine.state_of(e.workload) is State.ADMITTED:
                self.manager.engine.finish_workload(e.workload, now)
        elif e.type == ev.EVICTED:
            self.manager.engine.set_check_state(e.workload, d.check, model.CheckState.RETRY, now)

    # ------------------------------------------------------------------------------------ lost workers

    def _worker_lost(self, worker: str, now: int) -> None:
        """The manager loses sight of the worker: each workload whose job runs there waits
        ``workerLostTimeout`` from this instant (kept to the second, as the controller's annotation),
        unless its ``clusterName`` names another worker that answers (a copy that won back on its
        worker's return): that reservation is seen gone, so the check turns Retry at once."""
        for key, d in list(self.dispatches.items()):
            if d.winner != worker:
                continue
            reserving = self.cluster_name.get(key)
            if reserving and reserving != worker and self.reachable(reserving, now):
                self.manager.engine.set_check_state(key, d.check, model.CheckState.RETRY, now)
                continue
            lost = mk.lost_worker(d.lost_since, now / US, self.lost_timeout)
            if lost.record is not None:
                d.lost_since = lost.record
            self._timer(now + seconds_to_us(lost.wait), _LOST, (key, d.epoch, worker, d.lost_since))

    def _worker_back(self, worker: str, now: int) -> None:
        """The worker answers again: every workload it holds a copy of, or is nominated to, is looked at
        as the controller's reconcile does on the worker's return."""
        keys = {k for k, held in self.copies.items() if worker in held}
        keys |= {k for k, d in self.dispatches.items() if worker in d.nominated or (
            d.winner is None and self.dispatcher == model.MULTIKUEUE_ALL_AT_ONCE and worker in self.checks[d.check])}
        for key in sorted(keys):
            self._resync(key, now)

    def _resync(self, key: str, now: int) -> None:
        """The controller's reconcile of one workload, on the copies it can see now: no quota in the
        manager removes them; a finished copy finishes the workload; else the earliest admitted copy is
        the reserving one (the others go; a worker back with a copy admitted before the current winner's
        has its job run on, as ``first_admitted`` decides, while ``clusterName`` keeps naming the other,
        as ``reserving`` decides); none admitted while the worker ``clusterName`` names is seen gives the
        workload up (check Retry); else the nomination is carried out (missing copies made)."""
        d = self.dispatches.get(key)
        held = self.copies.get(key, set())
        here = sorted(c for c in held if self.reachable(c, now))
        if d is not None:
            here = [c for c in here if c in self.checks[d.check]]  # the controller looks at its config's workers
        if d is None:
            for cluster in here:
                self._remove(cluster, key)
            return
        states = {c: self.workers[c].engine.state_of(key) for c in here}
        if any(s is State.FINISHED for s in states.values()):
            if self.manager.engine.state_of(key) in (State.ADMITTED, State.QUOTA_RESERVED):
                self.manager.engine.finish_workload(key, now)  # the remote job's end comes over
            return
        admitted: dict[str, str | None] = {c: _stamp(self.admitted_at[(c, key)]) for c, s in states.items()
                                           if s is State.ADMITTED}
        winner = mk.first_admitted(admitted)
        if winner is None:
            reserving = self.cluster_name.get(key)  # the check is Ready: is the worker it names seen?
            if d.winner is not None and reserving and self.reachable(reserving, now):
                self.manager.engine.set_check_state(key, d.check, model.CheckState.RETRY, now)
            elif d.winner is None:
                nominated = (mk.all_at_once(self._usable(d.check, now)) if self.dispatcher == model.MULTIKUEUE_ALL_AT_ONCE
                             else d.nominated)
                self._nominate(key, d, nominated, now, exact=not mk.builtin_dispatcher(self.dispatcher))
            return
        if winner != d.winner:  # (a worker back with an older admission: its job runs on, clusterName stays)
            self._win(key, d, winner, now)
            return
        d.lost_since = None
        self._withdraw(key, now, keep=winner)
