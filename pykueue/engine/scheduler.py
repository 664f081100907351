"""The scheduling cycle: take each ClusterQueue's head, decide flavors, order, admit or preempt.

One cycle mirrors upstream's ``schedule()``: pop one head per active ClusterQueue; nominate each (flavor
assignment and, when needed, preemption targets); order the nominations (no borrowing before borrowing,
then priority, then queue order); then walk them, re-checking each against what earlier ones in the same
cycle took. Heads that are not admitted go back to their queue: straight back when the failure was
transient, parked with their equivalence class (BestEffortFIFO) when they cannot fit.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum

from pykueue.engine import events as ev
from pykueue.engine import model, slices
from pykueue.engine.cluster import ClusterQueueState
from pykueue.engine.events import EngineError
from pykueue.engine.fair_sharing import tournament_order
from pykueue.engine.flavors import FIT, NO_FIT, PREEMPT, Assignment, FlavorAssigner
from pykueue.engine.host import SchedulingHost
from pykueue.engine.podset_reducer import reduce_counts
from pykueue.engine.preemption import Target, fits, without
from pykueue.engine.quota import FR, add_usage, remove_usage
from pykueue.engine.workload import (
    MISCONFIGURED,
    WAITING_FOR_PODS_READY,
    WAITING_FOR_PREEMPTED,
    WAITING_FOR_QUOTA,
    Shared,
    WorkloadInfo,
)

# A workload admitted more often than this at one instant is in a loop that would never let the clock
# move: preempted back and forth, or evicted at once each time (an admission check answering Retry
# after 0 s, a pods-ready timeout of 0 s without backoff). Counted over every ``schedule`` call of
# the instant, since each timer of the instant may start a new one.
MAX_ADMISSIONS_PER_INSTANT = 50


@dataclass(slots=True, init=False)
class Entry:
    """A nominated head (``__init__`` written out: a dataclass's stays interpreted when compiled)."""

    cq: ClusterQueueState
    info: WorkloadInfo
    assignment: Assignment
    targets: list[Target]
    replaced: WorkloadInfo | None  # the admitted slice a scale-up replaces (its quota counts as the entry's)

    def __init__(self, cq: ClusterQueueState, info: WorkloadInfo, assignment: Assignment,
                 targets: list[Target], replaced: WorkloadInfo | None = None) -> None:
        self.cq, self.info, self.assignment, self.targets = cq, info, assignment, targets
        self.replaced = replaced


class Putback(Enum):
    """How a head that was not admitted goes back to its queue."""

    IMMEDIATE = "immediate"  # a candidate again in the next cycle of this instant
    PREEMPTING = "preempting"  # the same, first in line (BestEffortFIFO) while its victims leave
    PARK = "park"  # set aside with its class until capacity changes (not under StrictFIFO)
    PARK_ALWAYS = "park-always"  # set aside under either strategy (a namespace that does not match)


class Scheduler:
    def __init__(self, engine: SchedulingHost) -> None:
        self.engine = engine
        # Workloads that issued preemptions during this instant. Their victims release quota at once
        # (the simulator's rule), so a victim could otherwise win the next cycle and retake it
        # forever; upstream's victims are still terminating then. These go first in later cycles.
        self.preempting: set[str] = set()
        self._instant: int | None = None
        self._admissions: dict[str, int] = {}  # per workload, at ``_instant``
        # The flavor assigner's requests per pod-set tuple (flavors.prepared): a Shared of its own, as
        # the engine's keys the scheduling hash's pod-set part by the same tuples.
        self.prepared = Shared()
        # Per ClusterQueue, the heads of the last cycle that had any which were skipped because another
        # workload of that cycle had picked the same preemption targets (upstream's
        # admission_cycle_preemption_skips); a queue absent here skipped none.
        self.preemption_skips: dict[str, int] = {}

    def run(self, now: int) -> None:
        engine = self.engine
        if now != self._instant:
            self._instant = now
            self._admissions = {}
        admissions = self._admissions
        try:
            while True:
                engine.queues.wake_dirty_trees()
                if not self.cycle(now, admissions):
                    return
        finally:
            self.preempting.clear()

    # ---------------------------------------------------------------------------------------- cycle

    def cycle(self, now: int, admissions: dict[str, int]) -> bool:
        engine = self.engine
        heads: list[tuple[ClusterQueueState, WorkloadInfo]] = []
        for name in engine.queues.queues_with_candidates():
            cq = engine.cqs.get(name)
            if cq is None or not cq.active:
                engine.queues.has_no_candidates(name)
                continue
            info = cq.pending.pop()
            if info is None:
                engine.queues.has_no_candidates(name)
                continue
            heads.append((cq, info))
        if not heads:
            return False
        self.preemption_skips = {}
        progressed = False
        entries: list[Entry] = []
        awaiting = engine.awaiting
        with engine.preemptor.nominating_heads():
            for cq, info in heads:
                if awaiting and info.key in awaiting:
                    # Its victims' jobs are still stopping: it stays its queue's head (upstream requeues
                    # it at once), waiting for their quota and preempting no one else.
                    info.set_reason(WAITING_FOR_PREEMPTED, _pending_preemption(len(awaiting[info.key])))
                    self._requeue(cq, info, Putback.PREEMPTING)
                    continue
                if not engine.namespace_allowed(cq, info.spec.namespace):
                    info.set_reason(MISCONFIGURED, "Workload namespace doesn't match ClusterQueue selector")
                    self._requeue(cq, info, Putback.PARK_ALWAYS)
                    progressed = True
                    continue
                replaced = slices.replaced_slice(cq, info)
                with slices.hidden(cq, replaced):
                    assignment, targets = self.assignments(cq, info, replaced)
                entries.append(Entry(cq, info, assignment, targets, replaced))
        first = sorted((e for e in entries if e.info.key in self.preempting), key=lambda e: (e.info.seq, e.cq.name))
        rest = [e for e in entries if e.info.key not in self.preempting]
        if engine.config.fair_sharing.enable:
            ordered = itertools.chain(first, tournament_order(engine.state, rest))
        else:
            rest.sort(key=lambda e: (e.assignment.borrowing, -e.info.priority, e.info.order_us, e.info.seq, e.cq.name))
            ordered = itertools.chain(first, rest)
        reservations: list[tuple[ClusterQueueState, dict[FR, int]]] = []
        preempted: set[str] = set()
        for entry in ordered:
            if entry.replaced is not None and entry.replaced.key not in entry.cq.admitted:
                entry.replaced = None  # released earlier in this cycle: the slice is nominated again
                self._requeue(entry.cq, entry.info, Putback.IMMEDIATE)
                continue
            with slices.hidden(entry.cq, entry.replaced):
                progressed |= self._process(entry, now, reservations, preempted, admissions)
        for cq, usage in reservations:
            for fr, v in usage.items():
                remove_usage(cq.node, fr, v)
        return progressed

    def _process(self, entry: Entry, now: int, reservations: list, preempted: set[str],
                 admissions: dict[str, int]) -> bool:
        engine = self.engine
        cq, info, assignment = entry.cq, entry.info, entry.assignment
        mode = assignment.mode()
        if mode == NO_FIT:
            info.set_reason(assignment.no_fit_reason or WAITING_FOR_QUOTA, assignment.message())
            return self._requeue(cq, info, Putback.PARK)
        if mode == PREEMPT and not entry.targets:
            info.set_reason(WAITING_FOR_QUOTA, assignment.message())
            if cq.spec.preemption.reclaim_within_cohort != model.ANY:
                usage = self._to_reserve(cq, assignment)
                for fr, v in usage.items():
                    add_usage(cq.node, fr, v)
                reservations.append((cq, usage))
            return self._requeue(cq, info, Putback.PARK)
        if any(t.workload.key in preempted for t in entry.targets):
            self.preemption_skips[cq.name] = self.preemption_skips.get(cq.name, 0) + 1
            info.set_reason(WAITING_FOR_QUOTA, "Workload has overlapping preemption targets with another workload")
            return self._requeue(cq, info, Putback.IMMEDIATE)
        targets = [t for t in entry.targets if t.workload.has_quota]
        if targets:
            with without(engine.cqs, [t.workload for t in targets]):
                ok = fits(assignment.usage, cq.node, True)
        else:
            ok = fits(assignment.usage, cq.node, True)
        if not ok:
            info.set_reason(WAITING_FOR_QUOTA, "Workload no longer fits after processing another workload")
            return self._requeue(cq, info, Putback.IMMEDIATE)
        if mode == PREEMPT:
            for t in targets:
                preempted.add(t.workload.key)
                engine.preempt(t.workload, t.reason, info, now)
            for fr, v in assignment.usage.items():
                add_usage(cq.node, fr, v)
            reservations.append((cq, dict(assignment.usage)))
            if not engine.jobs_stop_at_once:
                # The victims hold their quota until their jobs have stopped (State.STOPPING).
                waiting = engine.await_victims(info, [t.workload for t in targets])
                info.set_reason(WAITING_FOR_PREEMPTED, _pending_preemption(waiting))
                self._requeue(cq, info, Putback.PREEMPTING)
                return True
            self.preempting.add(info.key)
            info.set_reason(WAITING_FOR_PREEMPTED, _pending_preemption(len(targets)))
            self._requeue(cq, info, Putback.PREEMPTING)
            return True
        wfpr = engine.config.wait_for_pods_ready
        if wfpr.enable and wfpr.block_admission and any(
            not w.pods_ready for c in engine.cqs.values() for w in c.admitted.values()
        ):
            info.set_reason(WAITING_FOR_PODS_READY, "waiting for all admitted workloads to be in PodsReady condition")
            self._requeue(cq, info, Putback.IMMEDIATE)
            return False
        count = admissions.get(info.key, 0) + 1
        admissions[info.key] = count
        if count > MAX_ADMISSIONS_PER_INSTANT:
            raise EngineError(_loop_message(info, count - 1, now))
        if entry.replaced is not None:
            # Upstream's replaceWorkloadSlice: the old slice is finished before the new one is admitted.
            # Its usage is already out of the tree (``slices.hidden``); the release takes it for good.
            old = entry.replaced
            engine.finish_workload(old.key, now, reason=slices.WORKLOAD_SLICE_REPLACED,
                                   message=slices.replaced_message(info.key), by=info.key)
        self.admit(cq, info, assignment, now)
        return True

    def _to_reserve(self, cq: ClusterQueueState, assignment: Assignment) -> dict[FR, int]:
        """Capacity a preemptor with no candidates holds for the rest of the cycle (upstream's rule)."""
        out: dict[FR, int] = {}
        node = cq.node
        for fr, v in assignment.usage.items():
            q = node.quota(fr)
            used = node.usage.get(fr, 0)
            if assignment.borrowing > 0:
                amount = v if q.borrowing_limit is None else min(v, q.nominal + q.borrowing_limit - used)
            else:
                amount = max(0, min(v, q.nominal - used))
            if amount > 0:
                out[fr] = amount
        return out

    def _requeue(self, cq: ClusterQueueState, info: WorkloadInfo, how: Putback) -> bool:
        """Put a head back. Returns True when the queue's candidates changed (a class was parked)."""
        pending = cq.pending
        if how is Putback.PREEMPTING:
            if cq.spec.queueing_strategy == model.BEST_EFFORT_FIFO:
                pending.sticky = info.key
        elif pending.sticky == info.key:
            pending.sticky = None
        pending.push(info)
        self.engine.queues.may_have_candidates(cq.name)
        if how in (Putback.IMMEDIATE, Putback.PREEMPTING):
            return False
        if how is Putback.PARK and cq.spec.queueing_strategy == model.STRICT_FIFO:
            return False  # a StrictFIFO head blocks its queue: it is looked at again next cycle
        pending.park_class_of(info, info.reason or WAITING_FOR_QUOTA, info.message, always=how is Putback.PARK_ALWAYS)
        return True

    # ----------------------------------------------------------------------------------- nominate

    def assigner(self, cq: ClusterQueueState, info: WorkloadInfo,
                 replaced: WorkloadInfo | None = None) -> FlavorAssigner:
        engine = self.engine
        pinned = slices.pinned_flavors(replaced) if replaced is not None else None
        return FlavorAssigner(info, cq, engine.flavors, engine.preemptor.oracle, engine.config.fair_sharing.enable,
                              self.prepared, pinned)

    def assignments(self, cq: ClusterQueueState, info: WorkloadInfo,
                    replaced: WorkloadInfo | None = None) -> tuple[Assignment, list[Target]]:
        """Full assignment, with preemption targets when needed; else the largest partial one. A
        scale-up slice is assigned the flavors its ``replaced`` slice holds (hidden by the caller)."""
        preemptor = self.engine.preemptor
        preemptor.memo = {}  # Preemptor.nominating, inlined: this runs for every head of every cycle
        try:
            return self._assignments(cq, info, replaced)
        finally:
            preemptor.memo = None

    def _assignments(self, cq: ClusterQueueState, info: WorkloadInfo,
                     replaced: WorkloadInfo | None) -> tuple[Assignment, list[Target]]:
        assigner = self.assigner(cq, info, replaced)
        full = assigner.assign()
        mode = full.mode()
        if mode == FIT:
            return full, []
        if mode == PREEMPT:
            targets = self.engine.preemptor.targets(cq, info, full.usage, full.frs_needing_preemption())
            if targets:
                return full, targets
        if any(ps.min_count is not None and ps.min_count < ps.count for ps in info.spec.pod_sets):

            def attempt(counts: list[int]) -> tuple[Assignment, list[Target]] | None:
                a = assigner.assign(counts)
                m = a.mode()
                if m == FIT:
                    return a, []
                if m == PREEMPT:
                    t = self.engine.preemptor.targets(cq, info, a.usage, a.frs_needing_preemption())
                    if t:
                        return a, t
                return None

            found = reduce_counts(info, attempt)
            if found is not None:
                return found
        return full, []

    # -------------------------------------------------------------------------------------- admit

    def admit(self, cq: ClusterQueueState, info: WorkloadInfo, assignment: Assignment, now: int) -> None:
        cq.pending.remove(info.key)
        self.preempting.discard(info.key)  # its preemptions are done; if it is evicted later it waits like any other
        # Admissions are immutable and a trace repeats a few hundred of them: one copy of each.
        admission = self.engine.shared.by_key(assignment.admission_key(cq.name),
                                              lambda: assignment.to_admission(cq.name))
        self.engine.reserve(cq, info, admission, assignment.usage, now)


def _loop_message(info: WorkloadInfo, times: int, now: int) -> str:
    """Why the instant cannot end, in the words of its last eviction."""
    at = f"at time {model.format_us(now)}"
    reason = info.eviction_reason
    if reason is None or reason == ev.EVICTED_PREEMPTED:
        return (
            f"preemption loop: workload {info.key} was admitted and preempted {times} times {at}; "
            "the configuration would preempt back and forth forever"
        )
    return (
        f"admission loop: workload {info.key} got quota and was evicted ({reason}) {times} times {at}; "
        "the configuration would evict and readmit it forever without the clock moving"
    )


def applicable_checks(spec: model.ClusterQueue, admission: model.Admission) -> list[str]:
    """Admission checks that apply to an admission: all-flavor rules, and rules naming a used flavor."""
    used = {f for psa in admission.pod_set_assignments for f in psa.flavors.values()}
    return [
        rule.name
        for rule in spec.admission_checks
        if not rule.on_flavors or used.intersection(rule.on_flavors)
    ]


def _pending_preemption(count: int) -> str:
    return f"Pending the preemption of {count} workload(s)"
