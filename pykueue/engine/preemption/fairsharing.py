"""Fair-sharing preemption (upstream's strategies S2-a and S2-b): preempt while the configured
strategies say the preemptor's share stays at or below the target's, visiting target queues from the
root towards the most unfair ones. Shares are the precise DRS of ``pykueue.engine.fair_sharing``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pykueue.engine import model
from pykueue.engine.fair_sharing import (
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    NEGATIVE_DRS,
    ZERO_DRS,
    drs,
)
from pykueue.engine.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    ClusterState,
    Target,
    candidate_order_key,
    minimal_targets,
    remove_workload_usage,
    uses_resources,
    without,
)
from pykueue.engine.quota import FR, QuotaNode, add_usage, remove_usage
from pykueue.engine.workload import WorkloadInfo

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterQueueState


class FairSharingPolicy:
    """Preemption targets under fair sharing."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

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
            for other in _subtree_cqs(self.state, cq.node.root()):
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
        state = self.state
        cands = self._candidates(cq, wl, frs)
        if not cands:
            return []
        strategies = state.config.fair_sharing.preemption_strategies or (
            LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
            LESS_THAN_INITIAL_SHARE,
        )
        found = self._iterate(cq, wl, requests, frs, cands, strategies)
        return minimal_targets(state.cqs, cq, requests, True, found, removed=True) or []

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
        state = self.state
        ordering = _TargetOrdering(state, cq, cands)
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
            preemptor_new = drs(p_node, state)
            target_old = drs(t_node, state)
            if strategy == LESS_THAN_INITIAL_SHARE and not preemptor_new < target_old:
                yield None, list(queue)
                queue.clear()
                continue
            rejected: list[WorkloadInfo] = []
            passed_one = False
            while queue:
                cand = queue.pop(0)
                with without(state.cqs, [cand]):
                    target_new = drs(t_node, state)
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
        state = self.state
        retry.sort(key=lambda c: candidate_order_key(c, cq.name))
        ordering = _TargetOrdering(state, cq, retry)
        for target_cq in ordering:
            queue = ordering.queues[target_cq.name]
            p_node, t_node = _almost_lcas(cq.node, target_cq.node)
            passed = drs(p_node, state) < drs(t_node, state)
            cand = queue.pop(0)
            if passed:
                remove_workload_usage(target_cq, cand)
                yield Target(cand, IN_COHORT_FAIR_SHARING)
            ordering.drop(target_cq)


def _subtree_cqs(state: ClusterState, node: QuotaNode) -> list[ClusterQueueState]:
    out = []
    for child in node.children:
        if child.is_cohort:
            out.extend(_subtree_cqs(state, child))
        else:
            out.append(state.cqs[child.name])
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

    def __init__(self, state: ClusterState, cq: ClusterQueueState, cands: list[WorkloadInfo]) -> None:
        self.state = state
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
        state = self.state
        best_cq, best_cq_drs = None, NEGATIVE_DRS
        best_cohort, best_cohort_drs = None, NEGATIVE_DRS
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            share = drs(child, state)
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
        return state.cqs[best_cq.name]
