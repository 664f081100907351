"""Fair sharing: dominant resource shares, the admission tournament, and fair preemption.

A node's share is how much it borrows beyond its own (subtree) quota, relative to what its parent could
lend, taking the worst resource, divided by its weight. Admission runs a tournament at every cohort:
the child whose share would be lowest after admitting its candidate wins. Preemption walks from the
root towards the most unfair queues, preempting while the configured strategies say the preemptor's
share stays at or below the target's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pykueue.engine import model
from pykueue.engine.preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    Target,
    add_workload_usage,
    candidate_order_key,
    fill_back,
    fits,
    remove_workload_usage,
    uses_resources,
)
from pykueue.engine.quota import FR, QuotaNode, add_usage, potential_available, remove_usage
from pykueue.engine.workload import WorkloadInfo

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterQueueState
    from pykueue.engine.engine import Engine

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
MAX_SHARE = 2**63 - 1


def weight(node: QuotaNode, engine: Engine) -> float:
    if node.is_cohort:
        c = engine.cohorts.get(node.name)
        return (c.spec.fair_weight_milli if c else 1000) / 1000
    return engine.cqs[node.name].spec.fair_weight_milli / 1000


def lendable(parent: QuotaNode) -> dict[str, int]:
    """Per resource name: what ``parent`` could make available, summed over flavors."""
    out: dict[str, int] = {}
    for fr in parent.root().subtree_quota:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def unweighted_ratio(node: QuotaNode, extra: dict[FR, int] | None = None) -> float:
    """Per mille of what the parent could lend that ``node`` borrows (with ``extra`` usage added),
    taking the worst resource; 0 when it borrows nothing or its parent has nothing to lend."""
    parent = node.parent
    if parent is None:
        return 0.0
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree_quota.items():
        amount = node.usage.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
    if not borrowed:
        return 0.0
    lend = lendable(parent)
    ratio = 0.0
    for res in sorted(borrowed):
        lr = lend.get(res, 0)
        if lr > 0:
            ratio = max(ratio, borrowed[res] * 1000.0 / lr)
    return ratio


DRS = tuple[int, float]
ZERO_DRS: DRS = (0, 0.0)
NEGATIVE_DRS: DRS = (0, -1.0)  # below every share: the starting point of a search for the highest


def drs(node: QuotaNode, engine: Engine, extra: dict[FR, int] | None = None) -> DRS:
    """The dominant resource share as a sort key that orders as upstream's precise DRS comparison: a
    node of weight 0 that borrows ranks above every finite share, and among such nodes the smaller
    unweighted share ranks first; otherwise the precise (unrounded) weighted shares compare."""
    ratio = unweighted_ratio(node, extra)
    if ratio == 0:
        return ZERO_DRS
    w = weight(node, engine)
    if w == 0:
        return (1, ratio)
    return (0, ratio / w)


def rounded_share(node: QuotaNode, engine: Engine, extra: dict[FR, int] | None = None) -> int:
    """The share rounded up, as upstream reports it; comparisons use ``drs``, never this."""
    zero_weight_borrows, value = drs(node, engine, extra)
    if zero_weight_borrows:
        return MAX_SHARE
    return math.ceil(value)


def weighted_share(node: QuotaNode, engine: Engine) -> int:
    """What upstream publishes as status.fairSharing.weightedShare."""
    return rounded_share(node, engine)


# ---------------------------------------------------------------------------------- admission order


def tournament_order(engine: Engine, entries: list) -> Iterator:
    """Yield scheduling entries in fair order, recomputing shares before each pick (so admissions made
    earlier in the cycle count). Entries must have ``cq``, ``info`` and ``assignment``."""
    by_root: dict[str, list] = {}
    for e in entries:
        by_root.setdefault(e.cq.node.root().name, []).append(e)
    for root_name in sorted(by_root):
        remaining = by_root[root_name]
        while remaining:
            if len(remaining) == 1 or remaining[0].cq.node.parent is None:
                yield remaining.pop(0)
                continue
            winner = _tournament_winner(engine, remaining)
            remaining.remove(winner)
            yield winner


def _tournament_winner(engine: Engine, entries: list):
    values: dict[tuple[str, str], DRS] = {}
    for e in entries:
        node = e.cq.node
        usage = e.assignment.usage
        for fr, v in usage.items():
            add_usage(node, fr, v)
        share = drs(node, engine)
        for ancestor in node.path_to_root():
            values[(ancestor.name, e.info.key)] = share
            share = drs(ancestor, engine)
        for fr, v in usage.items():
            remove_usage(node, fr, v)
    by_cq = {e.cq.name: e for e in entries}
    root = entries[0].cq.node.root()

    def key(e, cohort: str) -> tuple:
        return (values.get((cohort, e.info.key), ZERO_DRS), -e.info.priority, e.info.order_us, e.info.seq)

    def run(cohort: QuotaNode):
        cands = []
        for child in cohort.children:
            if child.is_cohort:
                c = run(child)
                if c is not None:
                    cands.append(c)
            elif child.name in by_cq:
                cands.append(by_cq[child.name])
        if not cands:
            return None
        return min(cands, key=lambda e: key(e, cohort.name))

    return run(root)


# ------------------------------------------------------------------------------------ preemption


class FairPreemptor:
    """Preemption targets under fair sharing (upstream's strategies S2-a and S2-b)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _candidates(self, cq: ClusterQueueState, wl: WorkloadInfo, frs: set[FR]) -> list[WorkloadInfo]:
        policy = cq.spec.preemption
        out: list[WorkloadInfo] = []
        if policy.within_cluster_queue != model.NEVER:
            same_prio_ok = policy.within_cluster_queue == model.LOWER_OR_NEWER_EQUAL_PRIORITY
            for cand in cq.admitted.values():
                if cand.priority > wl.priority:
                    continue
                if cand.priority == wl.priority and not (same_prio_ok and wl.order_us < cand.order_us):
                    continue
                if uses_resources(cand, frs):
                    out.append(cand)
        if cq.node.parent is not None and policy.reclaim_within_cohort != model.NEVER:
            only_lower = policy.reclaim_within_cohort != model.ANY
            for other in _subtree_cqs(self.engine, cq.node.root()):
                if other is cq or not any(other.node.is_borrowing(fr) for fr in frs):
                    continue
                for cand in other.admitted.values():
                    if only_lower and cand.priority >= wl.priority:
                        continue
                    if uses_resources(cand, frs):
                        out.append(cand)
        out.sort(key=lambda c: candidate_order_key(c, cq.name))
        return out

    def targets(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR]) -> list[Target]:
        engine = self.engine
        cands = self._candidates(cq, wl, frs)
        if not cands:
            return []
        strategies = engine.config.fair_sharing.preemption_strategies or (
            LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
            LESS_THAN_INITIAL_SHARE,
        )
        chosen: list[Target] = []
        ok = False
        for t in self._iterate(cq, wl, requests, frs, cands, strategies):
            chosen.append(t)
            if fits(requests, cq.node, True):
                ok = True
                break
        if not ok:
            self._restore(chosen)
            return []
        chosen = fill_back(engine.cqs, cq, chosen, requests, True)
        self._restore(chosen)
        return chosen

    def _restore(self, chosen: list[Target]) -> None:
        for t in chosen:
            add_workload_usage(self.engine.cqs[t.workload.cluster_queue], t.workload)

    def _iterate(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR],
                 cands: list[WorkloadInfo], strategies: tuple[str, ...]) -> Iterator[Target]:
        """Yield targets (already removed from usage); the preemptor's usage is simulated while shares
        are computed and withdrawn while the caller checks whether it fits."""
        node = cq.node
        simulated = False

        def simulate(add: bool) -> None:
            nonlocal simulated
            if add == simulated:
                return
            simulated = add
            for fr, v in requests.items():
                (add_usage if add else remove_usage)(node, fr, v)

        simulate(True)
        try:
            within_nominal = all(node.usage.get(fr, 0) <= node.quota(fr).nominal for fr in frs)
            retry: list[WorkloadInfo] = []
            for target, retry_more in self._first_pass(cq, cands, strategies[0], within_nominal):
                if target is None:
                    retry.extend(retry_more)
                    continue
                simulate(False)
                yield target
                simulate(True)
            if len(strategies) > 1 and retry:
                for target in self._second_pass(cq, retry):
                    simulate(False)
                    yield target
                    simulate(True)
        finally:
            simulate(False)

    def _first_pass(self, cq: ClusterQueueState, cands: list[WorkloadInfo], strategy: str, within_nominal: bool):
        engine = self.engine
        ordering = _TargetOrdering(engine, cq, cands)
        for target_cq in ordering:
            queue = ordering.queues[target_cq.name]
            if target_cq is cq:
                cand = queue.pop(0)
                remove_workload_usage(target_cq, cand)
                yield Target(cand, IN_CLUSTER_QUEUE), []
                continue
            if within_nominal:
                cand = queue.pop(0)
                remove_workload_usage(target_cq, cand)
                yield Target(cand, IN_COHORT_RECLAMATION), []
                continue
            p_node, t_node = _almost_lcas(cq.node, target_cq.node)
            preemptor_new = drs(p_node, engine)
            target_old = drs(t_node, engine)
            if strategy == LESS_THAN_INITIAL_SHARE and not preemptor_new < target_old:
                yield None, list(queue)
                queue.clear()
                continue
            rejected: list[WorkloadInfo] = []
            passed_one = False
            while queue:
                cand = queue.pop(0)
                remove_workload_usage(target_cq, cand)
                target_new = drs(t_node, engine)
                add_workload_usage(target_cq, cand)
                if strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
                    passed = preemptor_new <= target_new
                else:
                    passed = preemptor_new < target_old
                if passed:
                    remove_workload_usage(target_cq, cand)
                    if rejected:
                        yield None, rejected
                        rejected = []
                    yield Target(cand, IN_COHORT_FAIR_SHARING), []
                    passed_one = True
                    break
                rejected.append(cand)
            if rejected:
                yield None, rejected
            if not passed_one:
                ordering.drop(target_cq)

    def _second_pass(self, cq: ClusterQueueState, retry: list[WorkloadInfo]):
        engine = self.engine
        retry.sort(key=lambda c: candidate_order_key(c, cq.name))
        ordering = _TargetOrdering(engine, cq, retry)
        for target_cq in ordering:
            queue = ordering.queues[target_cq.name]
            p_node, t_node = _almost_lcas(cq.node, target_cq.node)
            passed = drs(p_node, engine) < drs(t_node, engine)
            cand = queue.pop(0)
            if passed:
                remove_workload_usage(target_cq, cand)
                yield Target(cand, IN_COHORT_FAIR_SHARING)
            ordering.drop(target_cq)


def _subtree_cqs(engine: Engine, node: QuotaNode) -> list[ClusterQueueState]:
    out = []
    for child in node.children:
        if child.is_cohort:
            out.extend(_subtree_cqs(engine, child))
        else:
            out.append(engine.cqs[child.name])
    return out


def _almost_lcas(preemptor: QuotaNode, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    """The two children of the lowest common cohort that lead to the preemptor and to the target."""
    ancestors = set(id(n) for n in preemptor.path_to_root())
    lca = None
    for n in target.path_to_root():
        if id(n) in ancestors:
            lca = n
            break

    def below(node: QuotaNode) -> QuotaNode:
        last = node
        for a in node.path_to_root():
            if a is lca:
                return last
            last = a
        return last

    return below(preemptor), below(target)


class _TargetOrdering:
    """Visit target queues from the root, always descending into the child with the highest share."""

    def __init__(self, engine: Engine, cq: ClusterQueueState, cands: list[WorkloadInfo]) -> None:
        self.engine = engine
        self.cq = cq
        self.queues: dict[str, list[WorkloadInfo]] = {}
        for c in cands:
            self.queues.setdefault(c.cluster_queue or "", []).append(c)
        self.pruned: set[int] = set()
        self.ancestors = {id(n) for n in cq.node.path_to_root()}

    def drop(self, cq: ClusterQueueState) -> None:
        self.pruned.add(id(cq.node))

    def __iter__(self) -> Iterator[ClusterQueueState]:
        if self.cq.node.parent is None:
            while self.queues.get(self.cq.name):
                yield self.cq
            return
        root = self.cq.node.root()
        while id(root) not in self.pruned:
            nxt = self._next(root)
            if nxt is not None:
                yield nxt

    def _next(self, cohort: QuotaNode) -> ClusterQueueState | None:
        engine = self.engine
        best_cq, best_cq_drs = None, NEGATIVE_DRS
        best_cohort, best_cohort_drs = None, NEGATIVE_DRS
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            share = drs(child, engine)
            if child.is_cohort:
                if share == ZERO_DRS and id(child) not in self.ancestors:
                    self.pruned.add(id(child))
                elif share >= best_cohort_drs:
                    best_cohort, best_cohort_drs = child, share
            else:
                has = bool(self.queues.get(child.name))
                if (share == ZERO_DRS and child is not self.cq.node) or not has:
                    self.pruned.add(id(child))
                elif share >= best_cq_drs:
                    best_cq, best_cq_drs = child, share
        if best_cohort is None and best_cq is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and best_cohort_drs >= best_cq_drs:
            return self._next(best_cohort)
        assert best_cq is not None
        return engine.cqs[best_cq.name]
